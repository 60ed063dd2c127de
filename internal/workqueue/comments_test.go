package workqueue

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// Comments are kept encoded and appended in place: a clone shares the
// bytes, and a comment added to either must not show in the other.
func TestCommentsOfACloneAreItsOwn(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	orig := &Task{ID: "sp-1", detail: &TaskDetail{}}
	for i := range 3 {
		orig.detail.AddComment(Comment{ID: int64(i + 1), Author: "ann", Text: fmt.Sprint("note ", i), At: at})
	}
	orig.detail.comments = slices.Grow(orig.detail.comments, 64) // room to append in place, as a replay leaves it
	c := orig.clone()
	c.Detail().AddComment(Comment{ID: 10, Author: "bob", Text: "the clone's", At: at})
	orig.Detail().AddComment(Comment{ID: 11, Author: "cy", Text: "the original's", At: at.Add(time.Second)})
	texts := func(t *Task) (out []string) {
		for c := range t.Detail().Comments() {
			out = append(out, fmt.Sprintf("%d %s %s %s", c.ID, c.Author, c.Text, c.At.Format(time.RFC3339)))
		}
		return out
	}
	want := []string{"1 ann note 0 2026-01-02T03:04:05Z", "2 ann note 1 2026-01-02T03:04:05Z", "3 ann note 2 2026-01-02T03:04:05Z"}
	if got := texts(orig); !slices.Equal(got, append(slices.Clone(want), "11 cy the original's 2026-01-02T03:04:06Z")) || orig.detail.NumComments() != 4 {
		t.Errorf("original: %q", got)
	}
	if got := texts(c); !slices.Equal(got, append(slices.Clone(want), "10 bob the clone's 2026-01-02T03:04:05Z")) || c.Detail().NumComments() != 4 {
		t.Errorf("clone: %q", got)
	}
}
