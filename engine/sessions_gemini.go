package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Gemini CLI (0.61.0) names each working directory in
// ~/.gemini/projects.json and keeps its sessions in
// ~/.gemini/tmp/<name>/chats/session-<time>-<id8>.jsonl, whose first line
// holds the whole sessionId; <name>/.project_root holds the directory. A
// prompt the person typed is a "user" message line; the context the CLI
// sends first (<session_context>) and its "$set" rewrites are not.

var _ SessionLister = (*Gemini)(nil)

func (e *Gemini) geminiDir() string {
	env := agentEnv(geminiSpec, e.cli.cfg, "", nil)
	home := lookupEnv(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".gemini")
}

// geminiLine reads one line of a Gemini CLI session file; its header's
// sessionId comes back as the cwd value, as what the file records of itself.
func geminiLine(line []byte) (string, bool, string) {
	if !bytes.Contains(line, []byte(`"user"`)) && !bytes.Contains(line, []byte(`"sessionId"`)) {
		return "", false, ""
	}
	var l struct {
		ID        string          `json:"id"`
		SessionID string          `json:"sessionId"`
		Type      string          `json:"type"`
		Set       json.RawMessage `json:"$set"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(line, &l) != nil || l.Set != nil {
		return "", false, ""
	}
	if l.SessionID != "" && l.Type == "" {
		return "", false, l.SessionID
	}
	if l.Type != "user" || l.ID == "" {
		return "", false, ""
	}
	var texts []string
	for _, c := range l.Content {
		texts = append(texts, c.Text)
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "<session_context>") {
		return "", false, ""
	}
	return text, true, ""
}

// geminiFiles lists the session files of every project folder, with the
// working directory of each. A symlink in a project folder counts only
// where it stays in that folder: a sandboxed agent writes its own, and a
// chats/ linked to another project's would list that project's sessions
// (their prompts) as this one's.
func (e *Gemini) geminiFiles() ([]sessionFile, []string) {
	root, err := filepath.EvalSymlinks(filepath.Join(e.geminiDir(), "tmp"))
	if err != nil {
		return nil, nil
	}
	projects, _ := os.ReadDir(root)
	var files []sessionFile
	var dirs []string
	for _, p := range projects {
		proj := within(root, filepath.Join(root, p.Name()))
		if proj == "" {
			continue
		}
		rootFile := within(proj, filepath.Join(proj, ".project_root"))
		b, err := os.ReadFile(rootFile)
		if rootFile == "" || err != nil {
			continue
		}
		dir := strings.TrimSpace(string(b))
		// A folder golem named is its working directory's only by that
		// name: the agent working there writes its marker.
		if strings.HasPrefix(p.Name(), "golem-") && p.Name() != geminiName(dir) {
			continue
		}
		chats := within(proj, filepath.Join(proj, "chats"))
		if chats == "" {
			continue
		}
		entries, _ := os.ReadDir(chats)
		for _, ent := range entries {
			if !strings.HasPrefix(ent.Name(), "session-") || !strings.HasSuffix(ent.Name(), ".jsonl") {
				continue
			}
			path := within(chats, filepath.Join(chats, ent.Name()))
			if path == "" {
				continue
			}
			st, err := os.Stat(path)
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			files = append(files, sessionFile{path: path, st: st})
			dirs = append(dirs, dir)
		}
	}
	return files, dirs
}

// Sessions implements SessionLister.
func (e *Gemini) Sessions(workdir string, detail int) ([]Session, error) {
	workdir = realDir(workdir)
	all, dirs := e.geminiFiles()
	var files []sessionFile
	for i, f := range all {
		if dirs[i] == workdir {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, newestFirst)
	out := make([]Session, 0, len(files))
	seen := map[string]bool{}
	for _, f := range files {
		id := headValue(f.path, geminiLine) // the file name has 8 of its characters
		if !looksLikeUUID(id) || seen[id] {
			continue // a session may leave an older file behind: the newest is it
		}
		seen[id] = true
		s := Session{ID: id, Workdir: workdir, Written: f.st.ModTime(), Prompts: -1}
		if len(out) < detail {
			if sum, err := summarize(f.path, f.st, geminiLine); err == nil {
				s.Prompts, s.FirstPrompt = sum.prompts, sum.first
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// SessionsElsewhere implements SessionLister.
func (e *Gemini) SessionsElsewhere(workdir, prefix string) ([]Session, error) {
	if prefix == "" {
		return nil, nil
	}
	workdir = realDir(workdir)
	files, dirs := e.geminiFiles()
	var out []Session
	seen := map[string]bool{}
	for i, f := range files {
		if dirs[i] == workdir || !strings.Contains(filepath.Base(f.path), "-"+prefix[:min(len(prefix), 8)]) {
			continue
		}
		if id := headValue(f.path, geminiLine); looksLikeUUID(id) && strings.HasPrefix(id, prefix) && !seen[id] {
			seen[id] = true
			out = append(out, Session{ID: id, Workdir: dirs[i], Written: f.st.ModTime(), Prompts: -1})
		}
	}
	return out, nil
}

// ResumeCommand implements SessionLister: `cd DIR && gemini --resume ID`.
func (e *Gemini) ResumeCommand(workdir, id string) string {
	cmd := "gemini"
	if c := e.cli.cfg.Command; c != "" {
		cmd = shellQuote(c)
	}
	if home, err := os.UserHomeDir(); err != nil || e.geminiDir() != filepath.Join(home, ".gemini") {
		cmd = "HOME=" + shellQuote(filepath.Dir(e.geminiDir())) + " " + cmd
	}
	return "cd " + shellQuote(realDir(workdir)) + " && " + cmd + " --resume " + shellQuote(id)
}
