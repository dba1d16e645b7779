package models

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// R2, E1: the node-down mail quotes what was seen; a long one is cut at a
// word with an ellipsis, never mid-word, and stays within its column.
func TestTruncateWordsEndsOnAWord(t *testing.T) {
	seen := MachinesDown(strings.Repeat("node-1: no heartbeat for 4 minutes and the provider says stopped; ", 6)).String()
	got := truncateWords(seen, 255)
	if len(got) > 255 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("%q (%d bytes)", got, len(got))
	}
	body := strings.TrimSuffix(got, "…")
	if !strings.HasPrefix(seen, body) {
		t.Fatalf("%q is not a prefix of what was seen", body)
	}
	if next := seen[len(body)]; next != ' ' && next != ';' && next != ',' && next != ':' {
		t.Errorf("cut mid-word: %q then %q", body[len(body)-10:], seen[len(body):len(body)+5])
	}
	if short := "node_down:node-1: no heartbeat"; truncateWords(short, 255) != short {
		t.Errorf("a short text is changed: %q", truncateWords(short, 255))
	}
}
