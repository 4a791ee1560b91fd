package cluster

import "github.com/golem-chat/golem/store/etcdstore"

// AttachStore ties a replica's etcd store to its conversations, as every
// replica is wired: the store's writes to a conversation are fenced by
// its ownership (a replica cut off from etcd never writes over its
// successor), a turn's mail is struck as its turn is first recorded, and
// a claim marks its message's event id seen and reads the conversation's
// record in its one round trip.
func (c *Conversations) AttachStore(es *etcdstore.Store) {
	es.SetFence(c.Fence)
	es.SetMailbox(c.MailKey)
	c.SetSeen(es)
	c.SetPrimer(es)
}
