package slack

// maxThreads bounds what the adapter keeps per thread or per message
// answered (status lines, the split view's threads, who asked, the answers
// whose stream did not start), which would otherwise grow by one for every
// thread golem ever answered in.
const maxThreads = 10000

// threadMap is what the adapter keeps per thread or per message, by
// channel/ts (streamKey), bounded: past its limit it forgets every entry
// before it takes a new one. What a thread still in use loses then is its
// status line's refresh, its split-view context, or for an answer being
// streamed the asker's ids (the stream then starts without them) or its
// fallback to edits (its continuation then tries a stream again); a bound
// by clearing costs no bookkeeping on every call. Not safe
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
