package mcpserver

// ReadySubscribers is how many open sessions are subscribed to
// spool://ready.
func (s *Server) ReadySubscribers() int {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.readSubscribed()
	return len(s.readers)
}
