// Package observe keeps the observers of a producer, so that consumers can
// subscribe once the producer is built instead of the producer being built
// around callbacks into consumers that do not exist yet.
package observe

import "sync"

// List holds the observers of values of type T. The zero List is empty and
// ready to use; a List must not be copied after first use.
type List[T any] struct {
	// mu protects last and subs; observers are called without it.
	mu   sync.Mutex
	last int
	subs []sub[T]
}

type sub[T any] struct {
	id int
	fn func(T)
}

// Subscribe adds fn, which Notify calls after those subscribed before it.
// The returned cancel removes it and may be called more than once; a Notify
// already under way may still call fn once.
func (l *List[T]) Subscribe(fn func(T)) (cancel func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	id := l.last
	l.subs = append(l.subs, sub[T]{id, fn})
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, s := range l.subs {
			if s.id == id {
				// A new slice, so a Notify ranging over the old one is
				// undisturbed.
				l.subs = append(l.subs[:i:i], l.subs[i+1:]...)
				return
			}
		}
	}
}

// Notify calls every observer with v, in the order they subscribed, from
// the calling goroutine. It holds no lock while calling, so an observer
// may subscribe or cancel; ordering between values is the caller's to
// keep, by not calling Notify concurrently.
func (l *List[T]) Notify(v T) {
	l.mu.Lock()
	subs := l.subs
	l.mu.Unlock()
	for _, s := range subs {
		s.fn(v)
	}
}
