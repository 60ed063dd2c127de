package store

import "github.com/spoolhq/spool/internal/fault"

// Option is a choice of the process that opens a store, made once in its
// main (cmd/spool's): not package state every store would share.
type Option func(*options)

type options struct {
	onLargeSave func() (done func())
	onLargeFold func() (done func())
	warning     func(fault.Warning)
}

// OnLargeSave sets the engine's OnLargeSave: what runs around a large
// projection's save (spool turns its collector on for it).
func OnLargeSave(f func() (done func())) Option {
	return func(o *options) { o.onLargeSave = f }
}

// OnLargeFold is what runs around the one fold of a large log that a
// fresh clone's first command makes (prime), and around its first receive
// of the log's copies: spool holds its heap then as replay does.
func OnLargeFold(f func() (done func())) Option {
	return func(o *options) { o.onLargeFold = f }
}

// Warnings has the log tell warning the warnings it names with a code
// (eventlog.CodeTornTailRepaired) with that code, and the others with
// fault.CodeWarning; without it they reach the store's warn as text.
func Warnings(warning func(fault.Warning)) Option {
	return func(o *options) { o.warning = warning }
}

func optionsOf(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Options are the options the store was opened with: a second store of
// the same process (spool watch's background jobs) is opened with them.
func (s *Store) Options() []Option { return s.opts }
