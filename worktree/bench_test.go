package worktree

import (
	"fmt"
	"path/filepath"
	"testing"
)

// benchRepo is a repository of 10,000 small files in 100 folders.
func benchRepo(b *testing.B) string {
	b.Helper()
	files := make(map[string]string, 10000)
	for i := range 10000 {
		files[filepath.Join(fmt.Sprintf("pkg%02d", i%100), fmt.Sprintf("file%05d.go", i))] = fmt.Sprintf("package pkg\n\n// File %d.\nconst N%d = %d\n", i, i, i)
	}
	return newRepo(b, files)
}

// BenchmarkFirstMessage is what a conversation's first message adds in a
// repository of 10,000 files: creating its worktree (git worktree add
// checks out every file). Rerun with
//
//	go test -run '^$' -bench 'Message' -benchtime 20x ./worktree
func BenchmarkFirstMessage(b *testing.B) {
	repo := benchRepo(b)
	ws, _ := newWorkspaces(b)
	open(b, ws, repo, "warm-up") // info/exclude, the repository lookup
	b.ResetTimer()
	for i := range b.N {
		open(b, ws, repo, fmt.Sprintf("slack:T1:C%d", i))
	}
}

// BenchmarkLaterMessage is what each later message adds: finding the
// worktree again (no git call).
func BenchmarkLaterMessage(b *testing.B) {
	repo := benchRepo(b)
	ws, _ := newWorkspaces(b)
	open(b, ws, repo, "slack:T1:C1")
	b.ResetTimer()
	for range b.N {
		open(b, ws, repo, "slack:T1:C1")
	}
}
