package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// replicaJoinTimeout bounds the first lease at start: etcd answered
// openStore already, so it is only slow, not absent.
const replicaJoinTimeout = 15 * time.Second

// membership is this golem among the replicas sharing its store: alone
// with bbolt (cluster.Local, no conversations to share), an etcd replica
// with an etcd store.
type membership struct {
	replica cluster.Replica
	etcd    *cluster.Etcd          // nil when alone
	convs   *cluster.Conversations // nil when alone
}

// joinCluster makes this golem a replica of those sharing st, when st is
// etcd, and leaves its marker in workspace (an absolute path) for bot
// doctor's check that the replicas share it.
func joinCluster(cfg config.Config, st store.Store, workspace string, log *slog.Logger) (membership, error) {
	es, ok := st.(*etcdstore.Store)
	if !ok {
		return membership{replica: cluster.NewLocal(cfg.Replica)}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaJoinTimeout)
	defer cancel()
	r, err := cluster.JoinEtcd(ctx, cluster.EtcdOptions{Client: es.Client(), Prefix: es.Prefix(), Name: cfg.Replica,
		TTL: cfg.ReplicaTTL, Logger: log})
	if err != nil {
		return membership{}, err
	}
	if err := r.MarkVolume(ctx, workspace); err != nil {
		log.Warn("bot doctor cannot check that the replicas share the workspace", "err", err)
	}
	convs := cluster.NewConversations(r, log)
	convs.AttachStore(es)
	return membership{replica: r, etcd: r, convs: convs}, nil
}

// live reports whether this replica may start turns: always when alone.
func (m membership) live() bool { return m.etcd == nil || m.etcd.Live() }

// journalKey is where a platform keeps the messages it confirmed and has
// not yet handed on: base alone, each replica's own among replicas (a
// message taken by a replica is kept by it; see README, Several replicas).
func (m membership) journalKey(base string) string {
	if m.etcd == nil {
		return base
	}
	return m.journalOf(base)(m.replica.Name())
}

// journalOf names another replica's journal key under base, so that the
// journals of replicas gone from the cluster are handed on; nil alone.
func (m membership) journalOf(base string) func(replica string) string {
	if m.etcd == nil {
		return nil
	}
	return func(replica string) string { return base + "/" + replica }
}

// close gives the membership up, after the dispatcher has stopped.
func (m membership) close() error {
	if m.etcd == nil {
		return nil
	}
	m.convs.Close()
	return m.etcd.Close()
}
