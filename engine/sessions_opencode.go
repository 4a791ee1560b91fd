package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// OpenCode (1.18.33) keeps its sessions in a SQLite database of its own
// layout (<XDG_DATA_HOME or ~/.local/share>/opencode/opencode.db), so
// golem reads them only through its CLI: `opencode session list --format
// json` gives each session's id, title, directory and when it was updated
// (those of the project it runs in: a git repository's, or every folder
// outside one), and `opencode export ID` a session's messages, from which
// the prompts typed are counted. An export costs a start of the CLI, so
// it is cached by session and update time.

var _ SessionLister = (*OpenCode)(nil)

// openCodeCLITimeout bounds one `opencode session list` or `export`.
const openCodeCLITimeout = 30 * time.Second

// openCodeListed is one session of `opencode session list --format json`.
type openCodeListed struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Updated   int64  `json:"updated"` // Unix milliseconds
	Directory string `json:"directory"`
}

// openCodePrompts caches what an export of a session taught, by its id
// and update time.
var openCodePrompts = struct {
	mu sync.Mutex
	m  map[string]openCodeCount
}{m: map[string]openCodeCount{}}

type openCodeCount struct {
	updated int64
	prompts int
	first   string
}

// openCodeOutputMax is the most of a CLI's output a listing takes in: an
// export of a session past it (tool results of big files) is stopped and
// the session's prompts are not counted.
var openCodeOutputMax = 64 << 20

// openCodeCLI runs the OpenCode CLI with args in workdir, with the
// environment of the engine's runs, and returns its stdout; one longer
// than openCodeOutputMax stops it with an error.
func (e *OpenCode) openCodeCLI(workdir string, args ...string) ([]byte, error) {
	path, err := e.cli.lookup()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), openCodeCLITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = workdir
	// It takes its directory (and so its project) from $PWD.
	cmd.Env = append(agentEnv(openCodeSpec, e.cli.cfg, "", nil), "PWD="+workdir)
	var stderr bytes.Buffer
	out := &cappedBuffer{max: openCodeOutputMax, stop: cancel}
	cmd.Stdout, cmd.Stderr = out, &stderr
	err = cmd.Run()
	if out.over {
		return nil, fmt.Errorf("opencode %s: stopped: its output is over %d bytes", strings.Join(args, " "), openCodeOutputMax)
	}
	if err != nil {
		return nil, fmt.Errorf("opencode %s: %w: %s", strings.Join(args, " "), err, firstLine(stderr.String()))
	}
	return out.buf.Bytes(), nil
}

// cappedBuffer keeps what is written to it up to max bytes; past that it
// calls stop and refuses more.
type cappedBuffer struct {
	buf  bytes.Buffer // not embedded: io.Copy would write through its ReadFrom
	max  int
	over bool
	stop func()
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.over || c.buf.Len()+len(p) > c.max {
		c.over = true
		c.stop()
		return 0, errors.New("output too long")
	}
	return c.buf.Write(p)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// listed returns the sessions OpenCode lists in workdir, newest first.
func (e *OpenCode) listed(workdir string) ([]openCodeListed, error) {
	if st, err := os.Stat(workdir); err != nil || !st.IsDir() {
		return nil, nil // no folder, no sessions
	}
	out, err := e.openCodeCLI(workdir, "session", "list", "--format", "json")
	if err != nil {
		return nil, err
	}
	var all []openCodeListed
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil // no sessions at all: it prints nothing
	}
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, fmt.Errorf("opencode session list printed no JSON list: %w", err)
	}
	all = slices.DeleteFunc(all, func(s openCodeListed) bool { return !strings.HasPrefix(s.ID, "ses_") })
	slices.SortStableFunc(all, func(a, b openCodeListed) int { return cmp.Compare(b.Updated, a.Updated) })
	return all, nil
}

// Sessions implements SessionLister.
func (e *OpenCode) Sessions(workdir string, detail int) ([]Session, error) {
	workdir = realDir(workdir)
	all, err := e.listed(workdir)
	if err != nil {
		return nil, err
	}
	var out []Session
	for _, l := range all {
		if realDir(l.Directory) != workdir {
			continue
		}
		out = append(out, Session{ID: l.ID, Workdir: workdir, Written: time.UnixMilli(l.Updated), Prompts: -1})
	}
	// Count the first detail ones, two CLIs at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range out[:min(detail, len(out))] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if c, ok := e.count(workdir, out[i].ID, out[i].Written.UnixMilli()); ok {
				out[i].Prompts, out[i].FirstPrompt = c.prompts, c.first
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// count returns the prompts of session id (updated at updated), from the
// cache or an export.
func (e *OpenCode) count(workdir, id string, updated int64) (openCodeCount, bool) {
	openCodePrompts.mu.Lock()
	c, ok := openCodePrompts.m[id]
	openCodePrompts.mu.Unlock()
	if ok && c.updated == updated {
		return c, true
	}
	out, err := e.openCodeCLI(workdir, "export", id)
	if err != nil {
		return openCodeCount{}, false
	}
	c, err = openCodeExport(out)
	if err != nil {
		return openCodeCount{}, false
	}
	c.updated = updated
	openCodePrompts.mu.Lock()
	if len(openCodePrompts.m) >= maxSummaries {
		openCodePrompts.m = map[string]openCodeCount{}
	}
	openCodePrompts.m[id] = c
	openCodePrompts.mu.Unlock()
	return c, true
}

// openCodeExport counts the prompts of an `opencode export` (the user
// messages with text of their own: not the synthetic parts the CLI adds).
func openCodeExport(out []byte) (openCodeCount, error) {
	var x struct {
		Messages []struct {
			Info struct {
				Role string `json:"role"`
			} `json:"info"`
			Parts []struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				Synthetic bool   `json:"synthetic"`
			} `json:"parts"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &x); err != nil {
		return openCodeCount{}, err
	}
	var c openCodeCount
	for _, m := range x.Messages {
		if m.Info.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range m.Parts {
			if p.Type == "text" && !p.Synthetic && strings.TrimSpace(p.Text) != "" {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) == 0 {
			continue
		}
		if c.prompts == 0 {
			c.first = strings.Join(texts, "\n")
		}
		c.prompts++
	}
	return c, nil
}

// SessionsElsewhere implements SessionLister: among the sessions OpenCode
// lists in workdir (its project's), those of other folders.
func (e *OpenCode) SessionsElsewhere(workdir, prefix string) ([]Session, error) {
	if prefix == "" {
		return nil, nil
	}
	workdir = realDir(workdir)
	all, err := e.listed(workdir)
	if err != nil {
		return nil, err
	}
	var out []Session
	for _, l := range all {
		if strings.HasPrefix(l.ID, prefix) && realDir(l.Directory) != workdir {
			out = append(out, Session{ID: l.ID, Workdir: l.Directory, Written: time.UnixMilli(l.Updated), Prompts: -1})
		}
	}
	return out, nil
}

// ResumeCommand implements SessionLister: `cd DIR && opencode --session
// ID`, with the engine's HOME and XDG_DATA_HOME when its config sets them
// (OpenCode's sessions live in its data folder).
func (e *OpenCode) ResumeCommand(workdir, id string) string {
	cmd := "opencode"
	if c := e.cli.cfg.Command; c != "" {
		cmd = shellQuote(c)
	}
	for _, name := range []string{"XDG_DATA_HOME", "HOME"} {
		if v, ok := e.cli.cfg.Env[name]; ok {
			cmd = name + "=" + shellQuote(filepath.Clean(v)) + " " + cmd
		}
	}
	return "cd " + shellQuote(realDir(workdir)) + " && " + cmd + " --session " + shellQuote(id)
}
