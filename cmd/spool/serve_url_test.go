package main

import (
	"net"
	"os"
	"testing"
)

func TestBaseURL(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "http://127.0.0.1:7070"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 7070}, "http://[::1]:7070"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 7070}, "http://" + net.JoinHostPort(host, "7070")},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://" + net.JoinHostPort(host, "8080")},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 7070}, "http://10.0.0.5:7070"},
	} {
		if got := baseURL(c.addr); got != c.want {
			t.Errorf("%v: %s, want %s", c.addr, got, c.want)
		}
	}
}
