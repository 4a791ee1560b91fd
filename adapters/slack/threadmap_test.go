package slack

import (
	"strconv"
	"testing"
)

// A threadMap holds at most its limit and one more; a new thread past
// that forgets the others, and a thread it holds is set again in place.
func TestThreadMapIsBounded(t *testing.T) {
	m := newThreadMap[int](3)
	for i := range 4 {
		m.put(strconv.Itoa(i), i)
	}
	m.put("0", 10) // held: no clearing
	if len(m.m) != 4 || m.get("0") != 10 || m.get("3") != 3 {
		t.Fatalf("after 4 threads and a repeat: %v, want all 4 held, 0 set to 10", m.m)
	}
	m.put("new", 5)
	if len(m.m) != 1 || m.get("new") != 5 || m.get("0") != 0 {
		t.Errorf("past the limit: %v, want only the new thread", m.m)
	}
	m.del("new")
	if len(m.m) != 0 {
		t.Errorf("after del: %v", m.m)
	}
}
