package views

import (
	"context"
	"strings"
	"testing"
)

// O3: text written with `backticks` shows its code as code, escaped,
// with nothing added around it; an unpaired backtick stays as written.
func TestProse(t *testing.T) {
	for in, want := range map[string]string{
		"run `until curl x; done`, or not": `run <code class="` + proseCodeClass + `">until curl x; done</code>, or not`,
		"`<b>` & `a<b`":                    `<code class="` + proseCodeClass + `">&lt;b&gt;</code> &amp; <code class="` + proseCodeClass + `">a&lt;b</code>`,
		"one ` backtick <i>":               "one ` backtick &lt;i&gt;",
		"":                                 "",
	} {
		var b strings.Builder
		if err := Prose(in).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("Prose(%q) = %q\nwant %q", in, b.String(), want)
		}
	}
}

// The terminate dialog says the machines' disks are
// deleted, and that an attached volume is kept and stays billed.
func TestTerminateDetailNamesTheVolume(t *testing.T) {
	p := ClusterPage{Storage: &StorageView{VolumeName: "datasets"}}
	got := p.TerminateDetail()
	for _, want := range []string{"its disks are deleted", "The volume datasets is kept and stays billed", "cannot be started again"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminate detail %q lacks %q", got, want)
		}
	}
}

// A node waiting for a peer to come up reads as a wait
// (slate), not as the amber of a connection error.
func TestNodeMessageWaitIsNotAWarning(t *testing.T) {
	if c := nodeMessageClass("Waiting for node-0 to join the private network."); strings.Contains(c, "amber") {
		t.Errorf("a wait shows as %q", c)
	}
	if c := nodeMessageClass("cannot reach node-0 (10.0.0.1:7000): timeout"); !strings.Contains(c, "amber") {
		t.Errorf("an unreachable peer shows as %q", c)
	}
}
