package workqueue

import "github.com/spoolhq/spool/internal/jsonout"

// The types of the long lists write themselves (jsonout.Appender), field
// by field as their declarations and tags say, byte for byte as
// encoding/json writes them: tasks.json, history.json and the CLI's --json
// lists hold thousands. TestAppendersAsTheLibrary fills every field.
//
// Their AppendJSON methods are generated from the declarations
// (fields_gen.go; the types are fieldgen.Appenders): TaskJSON, DepJSON,
// CommentJSON, ListItemJSON, EntryJSON and BlockedJSON. Those below decline.

// AppendJSON declines: encoding/json writes it. Declared so that
// DetailJSON does not inherit TaskJSON's, which knows neither its
// shadowing Labels, Dependencies and Comments nor Dependents and Parent.
func (DetailJSON) AppendJSON(dst []byte, _ jsonout.Format) ([]byte, bool) { return dst, false }

// AppendJSON declines: encoding/json writes it. Declared so that
// RelatedJSON does not inherit TaskJSON's, which would leave out
// dependency_type.
func (RelatedJSON) AppendJSON(dst []byte, _ jsonout.Format) ([]byte, bool) { return dst, false }
