package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/golem-chat/golem/engine"
)

// TestRegistry checks every registered engine's spec: what a new engine's
// one registry line must bring.
func TestRegistry(t *testing.T) {
	specs := engine.Engines()
	if len(specs) == 0 || engine.Default().Name != specs[0].Name {
		t.Fatalf("the default engine is not the first of %d", len(specs))
	}
	names := engine.Names()
	for i, s := range specs {
		t.Run(s.Name, func(t *testing.T) {
			if s.Name == "" || names[i] != s.Name || slices.Index(names, s.Name) != i {
				t.Errorf("name %q is empty, out of place or registered twice in %q", s.Name, names)
			}
			if s.DefaultCommand == "" || s.InstallHint == "" || s.NewParser == nil || s.NewSettings == nil {
				t.Fatalf("incomplete spec %+v", s)
			}
			if got, ok := engine.Find(s.Name); !ok || got.Name != s.Name {
				t.Errorf("Find(%q) = %q, %v", s.Name, got.Name, ok)
			}
			set := s.NewSettings()
			if set == nil || set.Base() == nil {
				t.Fatal("NewSettings gives no settings")
			}
			if e := set.Engine(); e.Name() != s.Name {
				t.Errorf("its settings build engine %q", e.Name())
			}
			if e, err := engine.New(s.Name, engine.Config{}); err != nil || e.Name() != s.Name {
				t.Errorf("New(%q) = %v, %v", s.Name, e, err)
			}
			if p, err := engine.NewParser(s.Name); err != nil || p == nil {
				t.Errorf("NewParser(%q) = %v, %v", s.Name, p, err)
			}
		})
	}
	if _, err := engine.NewParser("no-such-cli"); !errors.Is(err, engine.ErrUnknown) {
		t.Errorf("NewParser(no-such-cli): %v, want ErrUnknown", err)
	}
}
