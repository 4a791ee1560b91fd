package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Claude Code keeps each session in
// <CLAUDE_CONFIG_DIR or ~/.claude>/projects/<cwd encoded>/<uuid>.jsonl, one
// JSON object a line, appended to as the session goes on (see
// ClaudeProjectName for the encoding).

var _ SessionLister = (*ClaudeCode)(nil)

// claudeConfigDir is the CLI's config folder as a run of e would see it:
// CLAUDE_CONFIG_DIR of its environment, else $HOME/.claude.
func (e *ClaudeCode) claudeConfigDir() string {
	env := agentEnv(claudeCodeSpec, e.cli.cfg, "", nil)
	if dir := claudeDir(func(k string) string { return lookupEnv(env, k) }); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".claude")
}

// claudeDir is Claude Code's config folder in the environment getenv
// reads: CLAUDE_CONFIG_DIR, else $HOME/.claude; "" for neither.
func claudeDir(getenv func(string) string) string {
	return envDir(getenv, "CLAUDE_CONFIG_DIR", ".claude")
}

// ClaudeProjectName is the folder name Claude Code gives a working
// directory's sessions (2.1.x): every UTF-16 code unit that is not an
// ASCII letter or digit becomes "-"; a name longer than 200 is cut to 200
// and followed by "-" and a base-36 hash of the path (Java's string hash,
// made positive).
func ClaudeProjectName(dir string) string {
	units := utf16.Encode([]rune(dir))
	b := make([]byte, len(units))
	var h int32
	for i, u := range units {
		h = 31*h + int32(u)
		if u < 128 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
			b[i] = byte(u)
		} else {
			b[i] = '-'
		}
	}
	if len(b) <= 200 {
		return string(b)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(b[:200]) + "-" + strconv.FormatInt(abs, 36)
}

// realDir is dir with its symlinks resolved, as the CLI records its cwd
// (process.cwd() is the real path); dir itself when it cannot be resolved.
func realDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

// claudeLine reads one line of a Claude Code session file: a prompt the
// person typed is a "user" line whose content is text (a string, or text
// and image blocks), not a tool result, a meta line the CLI added, a
// subagent's (sidechain) or a compaction summary.
func claudeLine(line []byte) (string, bool, string) {
	// Cheap tests first: most lines of a big file are assistant messages
	// and tool results. `"tool_result"` with its quotes cannot occur inside
	// a JSON string (its quotes would be escaped), only as a block's type.
	if !bytes.Contains(line, []byte(`"user"`)) || bytes.Contains(line, []byte(`"tool_result"`)) {
		return "", false, ""
	}
	var l struct {
		Type          string `json:"type"`
		IsMeta        bool   `json:"isMeta"`
		IsSidechain   bool   `json:"isSidechain"`
		IsCompact     bool   `json:"isCompactSummary"`
		IsVisibleOnly bool   `json:"isVisibleInTranscriptOnly"`
		Cwd           string `json:"cwd"`
		Message       struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "user" {
		return "", false, ""
	}
	if l.IsMeta || l.IsSidechain || l.IsCompact || l.IsVisibleOnly || l.Message.Role != "user" {
		return "", false, l.Cwd
	}
	text, ok := promptText(l.Message.Content)
	if !ok || strings.HasPrefix(text, "<local-command-") {
		return "", false, l.Cwd
	}
	return text, true, l.Cwd
}

// promptText is the text of a message's content: a string, or the text
// blocks of an array (an image alone is a prompt without text); false for
// anything else.
func promptText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, strings.TrimSpace(s) != ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var texts []string
	some := false
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
			some = some || strings.TrimSpace(b.Text) != ""
		case "image", "document":
			some = true
		default:
			return "", false
		}
	}
	return strings.Join(texts, "\n"), some
}

// claudeRoot is the CLI's projects folder, resolved; "" when there is none.
func (e *ClaudeCode) claudeRoot() string {
	root, err := filepath.EvalSymlinks(filepath.Join(e.claudeConfigDir(), "projects"))
	if err != nil {
		return ""
	}
	return root
}

// Sessions implements SessionLister.
func (e *ClaudeCode) Sessions(workdir string, detail int) ([]Session, error) {
	root := e.claudeRoot()
	if root == "" {
		return nil, nil // the CLI never ran here
	}
	workdir = realDir(workdir)
	name := ClaudeProjectName(workdir)
	dirs := []string{filepath.Join(root, name)}
	if len(name) > 200 {
		// A long path's hash is the CLI's runtime's own in some builds:
		// take every folder of the same cut, checked by the cwd recorded.
		more, _ := filepath.Glob(filepath.Join(root, name[:200]+"-*")) // letters, digits and dashes only
		dirs = append(dirs, more...)
		slices.Sort(dirs)
		dirs = slices.Compact(dirs)
	}
	var files []sessionFile
	for _, dir := range dirs {
		fs, err := claudeFiles(root, dir, "")
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	slices.SortFunc(files, newestFirst)
	out := make([]Session, 0, len(files))
	for i, f := range files {
		s := Session{ID: f.id, Workdir: workdir, Written: f.st.ModTime(), Prompts: -1}
		if i < detail || len(dirs) > 1 {
			sum, err := summarize(f.path, f.st, claudeLine)
			if err != nil {
				continue // gone meanwhile, or unreadable
			}
			if len(dirs) > 1 && sum.cwd != "" && sum.cwd != workdir {
				continue // another long path with the same cut
			}
			if i < detail {
				s.Prompts, s.FirstPrompt = sum.prompts, sum.first
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// claudeFiles lists the session files in dir (a folder of root) whose id
// starts with prefix: regular files named <uuid>.jsonl, symlinks only when
// they resolve inside dir itself: a sandboxed agent writes its working
// directory's folder, and a link into another's would list that one's
// session (its prompts) as this one's.
func claudeFiles(root, dir, prefix string) ([]sessionFile, error) {
	real := within(root, dir)
	if real == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(real)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []sessionFile
	for _, ent := range entries {
		id, ok := strings.CutSuffix(ent.Name(), ".jsonl")
		if !ok || !looksLikeUUID(id) || !strings.HasPrefix(id, prefix) {
			continue
		}
		path := filepath.Join(real, ent.Name())
		if ent.Type()&fs.ModeSymlink != 0 {
			if path = within(real, path); path == "" {
				continue
			}
		}
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		files = append(files, sessionFile{id: id, path: path, st: st})
	}
	return files, nil
}

// SessionsElsewhere implements SessionLister.
func (e *ClaudeCode) SessionsElsewhere(workdir, prefix string) ([]Session, error) {
	root := e.claudeRoot()
	if root == "" || prefix == "" {
		return nil, nil
	}
	workdir = realDir(workdir)
	here := filepath.Join(root, ClaudeProjectName(workdir))
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Session
	for _, d := range dirs {
		dir := filepath.Join(root, d.Name())
		if dir == here {
			continue
		}
		files, err := claudeFiles(root, dir, prefix)
		if err != nil {
			continue
		}
		for _, f := range files {
			s := Session{ID: f.id, Written: f.st.ModTime(), Prompts: -1}
			if sum, err := summarize(f.path, f.st, claudeLine); err == nil {
				if sum.cwd == workdir {
					continue // a long path's other folder: not elsewhere
				}
				s.Workdir, s.Prompts, s.FirstPrompt = sum.cwd, sum.prompts, sum.first
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// ResumeCommand implements SessionLister: `cd DIR && claude --resume ID`,
// with CLAUDE_CONFIG_DIR set when golem's CLI keeps its sessions elsewhere
// than in ~/.claude of golem's own HOME (engines.claude-code.env sets HOME
// or CLAUDE_CONFIG_DIR).
func (e *ClaudeCode) ResumeCommand(workdir, id string) string {
	cmd := "claude"
	if c := e.cli.cfg.Command; c != "" {
		cmd = shellQuote(c)
	}
	dir := e.claudeConfigDir()
	if home, err := os.UserHomeDir(); err != nil || dir != filepath.Join(home, ".claude") {
		cmd = "CLAUDE_CONFIG_DIR=" + shellQuote(dir) + " " + cmd
	}
	return "cd " + shellQuote(realDir(workdir)) + " && " + cmd + " --resume " + shellQuote(id)
}

// looksLikeUUID reports whether s is a session id as the CLIs make them
// (8-4-4-4-12 hex digits).
func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
