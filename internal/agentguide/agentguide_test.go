package agentguide

import (
	"strings"
	"testing"
)

// The text is read whole at the start of every session: it stays under
// Max with the longest context it can have, and names the tools it
// teaches.
func TestTextShortAndComplete(t *testing.T) {
	for _, c := range []Context{{}, {Task: "sp-" + strings.Repeat("x", 125), Attempt: 1000}} {
		s := Text(c)
		if len(s) > Max {
			t.Errorf("%d bytes with %+v, want at most %d", len(s), c, Max)
		}
		for _, tool := range []string{"ready", "next", "heartbeat", "comment", "done", "fail", "propose", "show", "spool://task/{id}"} {
			if !strings.Contains(s, tool) {
				t.Errorf("the text does not name %s", tool)
			}
		}
		if c.Task != "" && !strings.Contains(s, c.Task) {
			t.Errorf("the text does not name the agent's task %s", c.Task)
		}
	}
}
