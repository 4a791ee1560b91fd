package httpapi

import "sync"

// openStreams counts the open /v1/chat streams, so that Start can wait for
// their handlers to return before it does. Once closed, no stream opens.
type openStreams struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n drops to 0 after closeAndWait began
}

// open counts one more stream; false once the server is stopping.
func (c *openStreams) open() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.n++
	return true
}

// done ends a stream that open counted.
func (c *openStreams) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// closeAndWait lets no stream open any more and waits for the open ones.
func (c *openStreams) closeAndWait() {
	c.mu.Lock()
	c.closed = true
	if c.n == 0 {
		c.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	c.idle = idle
	c.mu.Unlock()
	<-idle
}

// count is how many streams are open.
func (c *openStreams) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
