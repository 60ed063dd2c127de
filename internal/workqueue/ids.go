package workqueue

import "regexp"

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// ValidPrefix reports whether p can start task ids (ids.prefix).
func ValidPrefix(p string) bool { return prefixPattern.MatchString(p) }
