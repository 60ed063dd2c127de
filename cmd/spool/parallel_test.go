package main

import "testing"

// contending is held by the tests that run many spool processes against
// one remote or one log at once: they run beside lighter tests, never
// beside each other, so that their claims keep the margin to their
// deadlines (half of lock.timeout) they had when the tests ran one by one.
var contending = make(chan struct{}, 1)

// parallelContender is t.Parallel for such a test.
func parallelContender(t *testing.T) {
	t.Helper()
	t.Parallel()
	contending <- struct{}{}
	t.Cleanup(func() { <-contending })
}
