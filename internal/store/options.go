package store

// Option is a choice of the process that opens a store, made once in its
// main (cmd/spool's): not package state every store would share.
type Option func(*options)

type options struct {
	onLargeSave func() (done func())
}

// OnLargeSave sets the engine's OnLargeSave: what runs around a large
// projection's save (spool turns its collector on for it).
func OnLargeSave(f func() (done func())) Option {
	return func(o *options) { o.onLargeSave = f }
}

func optionsOf(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
