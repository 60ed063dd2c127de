module github.com/spoolhq/spool

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0
	github.com/gofrs/flock v0.13.1
	github.com/google/renameio/v2 v2.0.2
	github.com/rogpeppe/go-internal v1.16.0
	github.com/tidwall/gjson v1.20.0
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
