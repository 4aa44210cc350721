package db

// Waiting is how many reads wait for c's next statement: a test holds a statement and waits
// for its contenders to queue behind it.
func (c *Coalescer[K, V]) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiting)
}
