package slack

// maxThreads bounds what the adapter keeps per thread (status lines, the
// split view's threads), which would otherwise grow by one for every
// thread golem ever answered in.
const maxThreads = 10000

// threadMap is what the adapter keeps per thread, by channel/thread
// (streamKey), bounded: past its limit it forgets every thread before it
// takes a new one. What a thread still in use loses then is its status
// line's refresh or its split-view context, which the next event sets
// again; a bound by clearing costs no bookkeeping on every call. Not safe
// for concurrent use: the adapter's mu guards it.
type threadMap[V any] struct {
	m     map[string]V
	limit int
}

func newThreadMap[V any](limit int) threadMap[V] {
	return threadMap[V]{m: map[string]V{}, limit: limit}
}

// get is key's value, the zero value if it has none.
func (t threadMap[V]) get(key string) V { return t.m[key] }

// put sets key's value; a new key past the limit clears the map first.
func (t threadMap[V]) put(key string, v V) {
	if _, ok := t.m[key]; !ok && len(t.m) > t.limit {
		clear(t.m)
	}
	t.m[key] = v
}

func (t threadMap[V]) del(key string) { delete(t.m, key) }
