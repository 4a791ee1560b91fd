package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/clustertest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdConfig is a bot.yaml for the fake Telegram and agent with the store
// at storeURL, and the store_tls of c when it has TLS.
func etcdConfig(t *testing.T, tg *telegramtest.Server, storeURL string, c ...*etcdtest.Cluster) string {
	t.Helper()
	t.Setenv("GOLEM_TEST_TG_TOKEN", tg.Token())
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: %s
access:
  allow: ["telegram:42"]
engines:
  claude-code: {command: %q}
telegram: {token: "${GOLEM_TEST_TG_TOKEN}", api_url: %q}
slack: {bot_token: "", app_token: ""}
http: {listen: ""}
`, storeURL, enginetest.Build(t), tg.URL)
	if len(c) > 0 && c[0].CAFile != "" {
		config += fmt.Sprintf("store_tls: {ca: %q, cert: %q, key: %q}\n", c[0].CAFile, c[0].CertFile, c[0].KeyFile)
	}
	path := filepath.Join(t.TempDir(), "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeOnEtcd runs `bot serve` with store: etcd://…: it answers, and
// what it keeps (the conversation's session, Telegram's offset) is in
// etcd under the prefix, not in a file.
func TestServeOnEtcd(t *testing.T) {
	t.Run("etcd", func(t *testing.T) { serveOnEtcd(t, etcdtest.Start(t, 1)) })
	t.Run("etcds", func(t *testing.T) { serveOnEtcd(t, etcdtest.StartTLS(t)) })
}

func serveOnEtcd(t *testing.T, c *etcdtest.Cluster) {
	tg := telegramtest.New(t, telegramtest.Options{})
	path := etcdConfig(t, tg, c.URL("golem-test"), c)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"serve", "--config", path}, nil, &stderr, &stderr) }()

	tg.PushPrivate(telegramtest.User{ID: 42, FirstName: "Ada"}, "hello etcd")
	tg.WaitUntil(t, 20*time.Second, "the answer", func() bool { return hasText(tg.BotMessages(42), "echo: hello etcd") })
	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("bot serve exited %d; log:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot serve did not stop; log:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "data", "golem.db")); err == nil {
		t.Error("bot serve with an etcd store made a bbolt file too")
	}
	ec := etcdstore.Config{Endpoints: c.Endpoints, Prefix: "golem-test"}
	if c.CAFile != "" {
		var err error
		if ec.TLS, err = etcdstore.TLSConfig(c.CAFile, c.CertFile, c.KeyFile); err != nil {
			t.Fatal(err)
		}
	}
	st, err := etcdstore.Open(ec)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conv, err := st.Conversation(store.NewKey("telegram", "", "42", ""))
	if err != nil || conv.SessionID == "" {
		t.Errorf("the conversation in etcd: %+v, %v; want its session", conv, err)
	}
	if offset, err := st.Load("telegram.offset"); err != nil || len(offset) == 0 {
		t.Errorf("telegram.offset in etcd: %q, %v", offset, err)
	}
}

// TestServeEtcdUnreachable: with no etcd at the store's endpoints, bot
// serve exits 1 within 30 s, saying store: and where it looked.
func TestServeEtcdUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	tg := telegramtest.New(t, telegramtest.Options{})
	path := etcdConfig(t, tg, "etcd://"+addr+"/golem")
	var stderr syncBuffer
	start := time.Now()
	code := run(context.Background(), []string{"serve", "--config", path}, nil, &stderr, &stderr)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("bot serve took %v to give up", took)
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if log := stderr.String(); !strings.Contains(log, "store: etcd "+addr) || !strings.Contains(log, "no answer within") {
		t.Errorf("the error does not name the store and its endpoint:\n%s", log)
	}
}

// TestDoctorChecksAnEtcdStore: doctor opens an etcd store as serve does,
// and names a prefix a newer golem wrote.
func TestDoctorChecksAnEtcdStore(t *testing.T) {
	c := etcdtest.Start(t, 1)
	tg := telegramtest.New(t, telegramtest.Options{})
	cfg, err := config.Load(etcdConfig(t, tg, c.URL("doctor")), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkStore(cfg); len(got) != 3 || got[0].v != pass || !strings.Contains(got[0].text, c.URL("doctor")+" opens") ||
		got[1] != (finding{"schedules", pass, "no schedules"}) || got[2].v != note {
		t.Errorf("doctor on a fresh prefix: %+v", got)
	}
	st, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "newer"})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "newer/meta/schema", "7"); err != nil {
		t.Fatal(err)
	}
	cfg, err = config.Load(etcdConfig(t, tg, c.URL("newer")), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkStore(cfg); len(got) != 1 || got[0].v != fail || !strings.Contains(got[0].text, "schema version 7, this golem knows up to 2") {
		t.Errorf("doctor on a newer golem's prefix: %+v", got)
	}
}

// BenchmarkServeFirstText measures request → first text through `bot
// serve` over HTTP, each turn in a new conversation, one at a time, with
// the store in bbolt and in etcd (three members on loopback, in this
// process): one bot on each, a turn of each in every iteration, the first
// of them in turn, so that the machine's load weighs on both alike. It
// reports the medians (bbolt-ms, etcd-ms) and the median of what etcd
// added to the same iteration's bbolt turn (added-ms). The store calls
// before the first text are counted in core's BenchmarkStoreCallsPerTurn
// and cluster's BenchmarkRoundTripsPerTurn.
func BenchmarkServeFirstText(b *testing.B) {
	bolt := startLoadBotOn(b, 4, "./data/golem.db")
	etcd := startLoadBotOn(b, 4, etcdtest.Start(b, 3).URL("bench"))
	bolt.chat(b, "warm", "hello")
	etcd.chat(b, "warm", "hello")
	var onBolt, onEtcd, added []time.Duration
	round := 0
	for b.Loop() {
		first := func(lb *loadBot) time.Duration {
			r := lb.chat(b, fmt.Sprint("first-", round), "hi")
			return r.firstText.Sub(r.sent)
		}
		var tb, te time.Duration
		if round%2 == 0 {
			tb, te = first(bolt), first(etcd)
		} else {
			te, tb = first(etcd), first(bolt)
		}
		onBolt, onEtcd, added = append(onBolt, tb), append(onEtcd, te), append(added, te-tb)
		round++
	}
	b.ReportMetric(ms(median(onBolt)), "bbolt-ms")
	b.ReportMetric(ms(median(onEtcd)), "etcd-ms")
	b.ReportMetric(ms(median(added)), "added-ms")
}

// TestDoctorChecksTheReplicasShareTheWorkspace: every replica leaves a
// marker in its workspace at start; doctor on one replica finds them all
// in its own, and names the replica whose marker it cannot see.
func TestDoctorChecksTheReplicasShareTheWorkspace(t *testing.T) {
	c := etcdtest.Start(t, 1)
	tg := telegramtest.New(t, telegramtest.Options{})
	cfg, err := config.Load(etcdConfig(t, tg, c.URL("golem")), false)
	if err != nil {
		t.Fatal(err)
	}
	workspace, err := filepath.Abs(cfg.Path(cfg.Workspace))
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(cfg) // as serve does, before the replica joins
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	ctx := context.Background()
	for _, name := range []string{"r1", "r2"} {
		if err := clustertest.Join(t, c.Endpoints[0], name, 2*time.Second).MarkVolume(ctx, workspace); err != nil {
			t.Fatal(err)
		}
	}
	find := func() finding {
		t.Helper()
		got := checkStore(cfg)
		if len(got) != 3 {
			t.Fatalf("findings %+v", got)
		}
		return got[2]
	}
	if got := find(); got.v != pass || !strings.Contains(got.text, "r1, r2") {
		t.Errorf("two replicas on one workspace: %+v", got)
	}
	elsewhere := t.TempDir() // a replica whose workspace is a folder of its own machine
	if err := clustertest.Join(t, c.Endpoints[0], "r3", 2*time.Second).MarkVolume(ctx, elsewhere); err != nil {
		t.Fatal(err)
	}
	if got := find(); got.v != fail || !strings.Contains(got.text, "replica r3 uses the workspace "+elsewhere) {
		t.Errorf("a replica on another folder: %+v", got)
	}
	if err := clustertest.Join(t, c.Endpoints[0], "r3", 2*time.Second).MarkVolume(ctx, workspace); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(workspace, cluster.MarkerDir, "r3")); err != nil { // same path, another volume
		t.Fatal(err)
	}
	if got := find(); got.v != fail || !strings.Contains(got.text, "replica r3's marker is not in") {
		t.Errorf("a replica on another volume at the same path: %+v", got)
	}
}
