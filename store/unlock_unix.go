//go:build unix

package store

import (
	"os"
	"syscall"
)

// unlock drops the advisory lock bbolt took on f. Closing f alone is not
// enough after bbolt panicked half-way through opening: its memory map
// still refers to the file, which keeps the lock alive.
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
