// Package namecache learns names (of channels, of groups) in the
// background for whoever must not wait for a platform: Name answers from
// the cache at once, and asks the platform meanwhile when it does not
// know.
package namecache

import (
	"context"
	"sync"
	"time"
)

// Options configure a Cache; zero durations and counts take the defaults.
type Options struct {
	// Lookup asks the platform for id's name; an error leaves id unnamed
	// for FailTTL.
	Lookup func(ctx context.Context, id string) (string, error)
	// TTL is how long a name is kept (default 1h), FailTTL how long a
	// failed lookup is not tried again (default 10m).
	TTL, FailTTL time.Duration
	// Timeout bounds one lookup (default 10s); Concurrent lookups run at
	// once at most (default 2): past it Name asks nothing, a later call
	// does.
	Timeout    time.Duration
	Concurrent int
	// Max bounds the ids kept (default 10,000): past it the cache starts
	// empty again.
	Max int
}

// Cache is safe for concurrent use.
type Cache struct {
	opts  Options
	slots chan struct{}
	mu    sync.Mutex
	m     map[string]entry
}

type entry struct {
	name  string // "" while asked, or when the platform did not tell
	until time.Time
}

// New returns a Cache.
func New(opts Options) *Cache {
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	if opts.FailTTL <= 0 {
		opts.FailTTL = 10 * time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Concurrent <= 0 {
		opts.Concurrent = 2
	}
	if opts.Max <= 0 {
		opts.Max = 10000
	}
	return &Cache{opts: opts, slots: make(chan struct{}, opts.Concurrent)}
}

// Name returns id's name as far as it is known, "" otherwise, and never
// waits: an id not known (or known too long ago) is looked up in the
// background, once at a time (a lookup under way counts as known until it
// ends or its Timeout passes).
func (c *Cache) Name(id string) string {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.name
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return e.name
	}
	c.put(id, e.name, c.opts.Timeout)
	go func() {
		defer func() { <-c.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
		defer cancel()
		name, err := c.opts.Lookup(ctx, id)
		if err != nil {
			c.put(id, "", c.opts.FailTTL)
			return
		}
		c.put(id, name, c.opts.TTL)
	}()
	return e.name
}

func (c *Cache) put(id, name string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.opts.Max {
		if _, have := c.m[id]; !have {
			c.m = map[string]entry{}
		}
	}
	c.m[id] = entry{name: name, until: time.Now().Add(ttl)}
}
