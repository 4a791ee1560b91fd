package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Codex keeps each session (thread) in
// <CODEX_HOME or ~/.codex>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl,
// whose first line (session_meta) records the working directory; a
// prompt the person typed is an event_msg item_completed of a UserMessage
// item (0.171.0). The first lines are cached, as they never change.

var _ SessionLister = (*Codex)(nil)

// codexHome is where a run of e keeps its sessions.
func (e *Codex) codexHome() string {
	env := agentEnv(codexSpec, e.cli.cfg, "", nil)
	if dir := codexDir(func(k string) string { return lookupEnv(env, k) }); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}

// codexDir is Codex's folder in the environment getenv reads:
// CODEX_HOME, else $HOME/.codex; "" for neither.
func codexDir(getenv func(string) string) string {
	return envDir(getenv, "CODEX_HOME", ".codex")
}

// codexLine reads one line of a Codex rollout file.
func codexLine(line []byte) (string, bool, string) {
	meta := bytes.Contains(line, []byte(`"session_meta"`))
	if !meta && !bytes.Contains(line, []byte(`"UserMessage"`)) {
		return "", false, ""
	}
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			Type string `json:"type"`
			Cwd  string `json:"cwd"`
			Item struct {
				Type    string `json:"type"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"item"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil {
		return "", false, ""
	}
	if l.Type == "session_meta" {
		return "", false, l.Payload.Cwd
	}
	if l.Type != "event_msg" || l.Payload.Type != "item_completed" || l.Payload.Item.Type != "UserMessage" {
		return "", false, ""
	}
	var texts []string
	for _, c := range l.Payload.Item.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n"), true, ""
}

// heads caches what a session file records of itself in its first line
// (Codex: the working directory; Gemini CLI: the session id), by path.
var heads = struct {
	mu sync.Mutex
	m  map[string]string
}{m: map[string]string{}}

// headValue is what the first line of the file at path records of it, as
// info reads it (its cwd value).
func headValue(path string, info lineInfo) string {
	heads.mu.Lock()
	cwd, ok := heads.m[path]
	heads.mu.Unlock()
	if ok {
		return cwd
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	first, err := headLine(f)
	if err != nil {
		return "" // not written whole yet: ask again later
	}
	_, _, cwd = info(first)
	heads.mu.Lock()
	if len(heads.m) >= maxSummaries {
		heads.m = map[string]string{}
	}
	heads.m[path] = cwd
	heads.mu.Unlock()
	return cwd
}

// headLine reads r's first line, trimmed, up to about maxLine (a longer
// one is cut there); err is the read's error when the line ended before
// its newline (io.EOF: not written whole yet).
func headLine(r io.Reader) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var first []byte
	for len(first) <= maxLine {
		chunk, err := br.ReadSlice('\n')
		first = append(first, chunk...)
		if err != bufio.ErrBufferFull {
			if err != nil {
				return bytes.TrimSpace(first), err
			}
			break
		}
	}
	return bytes.TrimSpace(first), nil
}

// codexFiles lists the rollout files below the sessions folder whose id
// starts with prefix, with the working directory each records.
func (e *Codex) codexFiles(prefix string) ([]sessionFile, []string) {
	return codexRollouts(e.codexHome(), prefix)
}

// codexRollouts lists the rollout files below home's sessions folder
// whose id starts with prefix, with the working directory each records.
func codexRollouts(home, prefix string) ([]sessionFile, []string) {
	root, err := filepath.EvalSymlinks(filepath.Join(home, "sessions"))
	if err != nil {
		return nil, nil
	}
	var files []sessionFile
	var cwds []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // WalkDir does not enter symlinked folders
		}
		name, ok := strings.CutSuffix(d.Name(), ".jsonl")
		if !ok || !strings.HasPrefix(name, "rollout-") || len(name) < 36 {
			return nil
		}
		id := name[len(name)-36:]
		if !looksLikeUUID(id) || !strings.HasPrefix(id, prefix) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if path = within(root, path); path == "" {
				return nil
			}
		}
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		files = append(files, sessionFile{id: id, path: path, st: st})
		cwds = append(cwds, headValue(path, codexLine))
		return nil
	})
	return files, cwds
}

// Sessions implements SessionLister.
func (e *Codex) Sessions(workdir string, detail int) ([]Session, error) {
	workdir = realDir(workdir)
	all, cwds := e.codexFiles("")
	var files []sessionFile
	for i, f := range all {
		if cwds[i] == workdir {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, newestFirst)
	out := make([]Session, 0, len(files))
	for i, f := range files {
		s := Session{ID: f.id, Workdir: workdir, Written: f.st.ModTime(), Prompts: -1}
		if i < detail {
			if sum, err := summarize(f.path, f.st, codexLine); err == nil {
				s.Prompts, s.FirstPrompt = sum.prompts, sum.first
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// SessionsElsewhere implements SessionLister.
func (e *Codex) SessionsElsewhere(workdir, prefix string) ([]Session, error) {
	if prefix == "" {
		return nil, nil
	}
	workdir = realDir(workdir)
	files, cwds := e.codexFiles(prefix)
	var out []Session
	for i, f := range files {
		if cwds[i] != workdir {
			out = append(out, Session{ID: f.id, Workdir: cwds[i], Written: f.st.ModTime(), Prompts: -1})
		}
	}
	return out, nil
}

// ResumeCommand implements SessionLister: `cd DIR && codex resume ID`,
// with CODEX_HOME set when golem's Codex keeps its sessions elsewhere than
// in ~/.codex of golem's own HOME.
func (e *Codex) ResumeCommand(workdir, id string) string {
	cmd := "codex"
	if c := e.cli.cfg.Command; c != "" {
		cmd = shellQuote(c)
	}
	dir := e.codexHome()
	if home, err := os.UserHomeDir(); err != nil || dir != filepath.Join(home, ".codex") {
		cmd = "CODEX_HOME=" + shellQuote(dir) + " " + cmd
	}
	return "cd " + shellQuote(realDir(workdir)) + " && " + cmd + " resume " + shellQuote(id)
}
