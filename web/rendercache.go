package web

import "sync"

// renderCache keeps rendered answers under keys that identify their content
// exactly (a models.Pick stamp and whatever else the bytes depend on), so a
// hit is never stale and nothing needs invalidating: a new catalog version,
// a hold or an offer going stale gives new keys. When the kept bytes pass
// the budget it forgets everything (old keys are never asked for again).
type renderCache struct {
	mu     sync.Mutex
	m      map[string][]byte
	size   int
	budget int
}

// renderCacheBudget bounds the memory of kept pages.
const renderCacheBudget = 64 << 20

func newRenderCache(budget int) *renderCache {
	return &renderCache{m: map[string][]byte{}, budget: budget}
}

// get returns the bytes kept under key; callers must not modify them.
func (c *renderCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[key]
	return b, ok
}

// put keeps a copy of b under key.
func (c *renderCache) put(key string, b []byte) []byte {
	kept := append([]byte(nil), b...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(kept) > c.budget {
		return kept
	}
	if c.size+len(kept) > c.budget {
		clear(c.m)
		c.size = 0
	}
	if old, ok := c.m[key]; ok {
		c.size -= len(old)
	}
	c.m[key] = kept
	c.size += len(kept)
	return kept
}
