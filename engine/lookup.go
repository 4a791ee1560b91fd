package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// lookup finds the CLI: the configured command (a path, or a name), else
// the default name; a name is searched in PATH, then in ~/.local/bin.
func (c *cli) lookup() (string, error) {
	name := c.cfg.Command
	if name == "" {
		name = c.defaultCommand
	}
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			name = filepath.Join(home, rest)
		}
	}
	if strings.ContainsRune(name, filepath.Separator) {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("engine %s: command %s: %w (%v); %s", c.name, name, ErrNotInstalled, err, c.installHint)
		}
		return filepath.Abs(name)
	}
	if path, err := exec.LookPath(name); err == nil {
		return filepath.Abs(path)
	}
	if home, err := os.UserHomeDir(); err == nil {
		path := filepath.Join(home, ".local", "bin", name)
		if executable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("engine %s: %w: %q is not in PATH or ~/.local/bin; %s", c.name, ErrNotInstalled, name, c.installHint)
}

// executable reports why path is not an executable regular file, or nil.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}
