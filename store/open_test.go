package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// holdEnv makes the test binary a second process that opens the store named
// by it, prints "ready" and keeps it open until its stdin closes.
const holdEnv = "GOLEM_STORE_TEST_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		os.Exit(holdStore(path))
	}
	os.Exit(m.Run())
}

func holdStore(path string) int {
	s, err := Open(path)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Println("close:", err)
		return 1
	}
	return 0
}

func TestSecondOpenInProcessIsLocked(t *testing.T) {
	s, path := openTemp(t, nil)
	_, err := Open(path)
	errorsIs(t, err, ErrLocked)
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	// The first store still works, and once it is closed the file opens.
	if err := s.Save("k", []byte("v")); err != nil {
		t.Fatalf("first store after the refused open: %v", err)
	}
	closeStore(t, s)
	s = openAt(t, path, nil)
	closeStore(t, s)
}

func TestSecondProcessIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golem.db")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("holder process said %q, %v; want ready", line, err)
	}

	_, err = Open(path)
	errorsIs(t, err, ErrLocked)

	// Once the other process lets go, the file opens here.
	_ = stdin.Close()
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder process: %v: %s", err, rest)
	}
	s := openAt(t, path, nil)
	closeStore(t, s)
}

// writeRaw builds a bbolt file at path with fn, bypassing the store.
func writeRaw(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func setVersion(raw []byte) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keyVersion, raw)
	}
}

func TestOpenChecksSchema(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(tx *bolt.Tx) error
		want    error  // nil = opens
		message string // in the error
	}{
		{"newer version", setVersion(binary.BigEndian.AppendUint64(nil, 99)), ErrSchemaTooNew, "schema version 99"},
		{"unreadable version", setVersion([]byte{1, 2, 3}), ErrCorrupt, "schema version"},
		{"another program's bbolt file", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("sessions"))
			return err
		}, ErrCorrupt, `"sessions"`},
		{"empty bbolt file", func(*bolt.Tx) error { return nil }, nil, ""},
		{"version 0 is migrated", setVersion(binary.BigEndian.AppendUint64(nil, 0)), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "golem.db")
			writeRaw(t, path, tt.prepare)
			s, err := Open(path)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer closeStore(t, s)
				if err := s.SaveConversation(Conversation{Key: testKey}); err != nil {
					t.Errorf("save after open: %v", err)
				}
				return
			}
			errorsIs(t, err, tt.want)
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not say %q", err, tt.message)
			}
		})
	}
}

func TestMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golem.db")
	s := openAt(t, path, nil) // the current schema
	if err := s.SaveConversation(Conversation{Key: testKey, SessionID: "sess"}); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)

	failing := append(migrations[:len(migrations):len(migrations)], func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketState).Put([]byte("half"), []byte("done")); err != nil {
			return err
		}
		return errors.New("disk on fire")
	})
	o := defaultOptions()
	o.migrations = failing
	if _, err := open(path, o); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("open with a failing migration: %v, want its error", err)
	}

	next := append(migrations[:len(migrations):len(migrations)], func(tx *bolt.Tx) error {
		return tx.Bucket(bucketState).Put([]byte("migrated"), []byte("yes"))
	})
	o.migrations = next
	s, err := open(path, o)
	if err != nil {
		t.Fatalf("open with a new migration: %v", err)
	}
	for key, want := range map[string]string{"migrated": "yes", "half": ""} {
		got, err := s.Load(key)
		if err != nil || string(got) != want {
			t.Errorf("load %s = %q, %v; want %q", key, got, err, want)
		}
	}
	if c, err := s.Conversation(testKey); err != nil || c.SessionID != "sess" {
		t.Errorf("conversation after migration: %+v, %v", c, err)
	}
	closeStore(t, s)

	// The older code refuses the migrated file.
	_, err = Open(path)
	errorsIs(t, err, ErrSchemaTooNew)
}

func TestOpenGarbage(t *testing.T) {
	random := func(n int) []byte {
		b := make([]byte, n)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	tests := []struct {
		name    string
		content func(t *testing.T) []byte
	}{
		{"a few bytes of text", func(*testing.T) []byte { return []byte("hello\n") }},
		{"random bytes", func(*testing.T) []byte { return random(64 << 10) }},
		{"zeros", func(*testing.T) []byte { return make([]byte, 64<<10) }},
		{"a store with both meta pages overwritten", func(t *testing.T) []byte {
			b := validStore(t)
			copy(b, random(2*4096))
			return b
		}},
		{"a store with every page after the meta pages overwritten", func(t *testing.T) []byte {
			b := validStore(t)
			copy(b[2*4096:], random(len(b)-2*4096))
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "golem.db")
			if err := os.WriteFile(path, tt.content(t), 0o600); err != nil {
				t.Fatal(err)
			}
			// Twice: a failed open must not leave the file locked.
			for range 2 {
				_, err := Open(path)
				errorsIs(t, err, ErrCorrupt)
			}
		})
	}
}

// validStore returns the bytes of a store file with some content.
func validStore(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "valid.db")
	s := openAt(t, path, nil)
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i := range 100 {
			raw, err := encodeConversation(Conversation{SessionID: "s"})
			if err != nil {
				return err
			}
			if err := tx.Bucket(bucketConversations).Put([]byte(NewKey("t", "w", fmt.Sprint("k", i), "").String()), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDamagedPageFailsTheCallNotTheProcess(t *testing.T) {
	b := validStore(t)
	// Spoil the page type of the leaf page holding the conversation keys.
	at := bytes.Index(b, []byte("k50"))
	if at < 0 {
		t.Fatal("key not found in the file")
	}
	const pageSize = 4096
	page := at / pageSize * pageSize
	binary.LittleEndian.PutUint16(b[page+8:], 0xffff)
	path := filepath.Join(t.TempDir(), "golem.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open: %v; want it to open, the damage is in a data page", err)
	}
	defer closeStore(t, s)
	_, err = s.Conversation(NewKey("t", "w", "k50", ""))
	errorsIs(t, err, ErrCorrupt)
	err = s.SaveConversation(Conversation{Key: NewKey("t", "w", "k51", ""), SessionID: "x"})
	errorsIs(t, err, ErrCorrupt)
	// Other buckets still work.
	if err := s.Save("k", []byte("v")); err != nil {
		t.Errorf("save state: %v", err)
	}
}

// TestMigrateScheduleKeys: schedules stored before the index by
// conversation (schema version 5) are indexed when the file is opened.
func TestMigrateScheduleKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golem.db")
	o := defaultOptions()
	o.migrations = migrations[:5]
	s, err := open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	key := NewKey("slack", "T", "C", "")
	raw, _ := json.Marshal(Schedule{ID: "a1b2", Key: key, Spec: "@hourly", Prompt: "p"})
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSchedules).Put([]byte("a1b2"), raw) }); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = openAt(t, path, nil)
	defer closeStore(t, s)
	got, err := s.ConversationSchedules(key)
	if err != nil || len(got) != 1 || got[0].ID != "a1b2" {
		t.Fatalf("the conversation's schedules after the migration: %+v, %v", got, err)
	}
	errorsIs(t, s.AddSchedule(Schedule{ID: "c3d4", Key: key, Prompt: "p"}, 1), ErrScheduleLimit)
}
