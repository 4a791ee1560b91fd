package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Replicas must share the workspace: a conversation's next turn may run
// on another replica and finds its files, and its agent session, there.
// So that `bot doctor` can tell, each replica leaves a marker in the
// workspace at start (MarkerDir/NAME, a random token) and says in etcd
// which token it wrote where; CheckVolume, on any replica, looks for every
// replica's marker in its own workspace.

// MarkerDir is where, in the workspace, the replicas leave their markers.
const MarkerDir = ".golem/replicas"

// mark is what a replica says in etcd of its marker.
type mark struct {
	Workspace string `json:"workspace"`
	Token     string `json:"token"`
}

// MarkVolume leaves this replica's marker in workspace (an absolute path)
// and records it in etcd.
func (e *Etcd) MarkVolume(ctx context.Context, workspace string) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	m := mark{Workspace: workspace, Token: hex.EncodeToString(b[:])}
	dir := filepath.Join(workspace, MarkerDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("replica: the workspace's marker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerName(e.name)), []byte(m.Token+"\n"), 0o644); err != nil {
		return fmt.Errorf("replica: the workspace's marker: %w", err)
	}
	raw, _ := json.Marshal(m)
	if _, err := e.cli.Put(ctx, e.prefix+"volume/"+markerName(e.name), string(raw)); err != nil {
		return fmt.Errorf("replica: record the workspace's marker: %w", err)
	}
	return nil
}

// markerName is a replica's name made safe as a file name.
func markerName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, strings.TrimLeft(name, "."))
}

// VolumeCheck is what CheckVolume found: the replicas whose marker is in
// the workspace, and what is wrong with the others'.
type VolumeCheck struct {
	Seen     []string
	Problems []string
}

// CheckVolume looks in workspace for the marker of every replica that
// ever started under prefix (the store's key prefix).
func CheckVolume(ctx context.Context, cli *clientv3.Client, prefix, workspace string) (VolumeCheck, error) {
	dir := prefix + "/cluster/volume/"
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return VolumeCheck{}, err
	}
	var c VolumeCheck
	for _, kv := range resp.Kvs {
		name := strings.TrimPrefix(string(kv.Key), dir)
		var m mark
		if json.Unmarshal(kv.Value, &m) != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("replica %s: its record is not readable", name))
			continue
		}
		if m.Workspace != workspace {
			c.Problems = append(c.Problems, fmt.Sprintf("replica %s uses the workspace %s, this one %s", name, m.Workspace, workspace))
			continue
		}
		got, err := os.ReadFile(filepath.Join(workspace, MarkerDir, name))
		if err != nil || strings.TrimSpace(string(got)) != m.Token {
			c.Problems = append(c.Problems, fmt.Sprintf("replica %s's marker is not in %s here", name, filepath.Join(workspace, MarkerDir)))
			continue
		}
		c.Seen = append(c.Seen, name)
	}
	slices.Sort(c.Seen)
	return c, nil
}
