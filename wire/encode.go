package wire

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes a protocol message. Unlike json.Marshal it leaves '<',
// '>' and '&' as they are: the messages go to a WebSocket, never into
// HTML, and escaping them (six bytes for one) would let a prompt or a
// name made of them grow a message sixfold. What remains escaped (quotes,
// backslashes, tabs and line breaks, U+2028 and U+2029) at most doubles
// the text it is in.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
