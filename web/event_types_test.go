package web

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
)

// eventTypeToken is a public event type written in backticks.
var eventTypeToken = regexp.MustCompile("`((?:cluster|node|run|billing|reservation)\\.[a-z_]+)`")

// typesBetween lists the event types written in text between start and
// end (the first of each after start), in order.
func typesBetween(t *testing.T, text, start, end string) []string {
	t.Helper()
	_, after, ok := strings.Cut(text, start)
	if !ok {
		t.Fatalf("docs/api.md: %q not found", start)
	}
	part, _, ok := strings.Cut(after, end)
	if !ok {
		t.Fatalf("docs/api.md: %q not found after %q", end, start)
	}
	var out []string
	for _, m := range eventTypeToken.FindAllStringSubmatch(part, -1) {
		out = append(out, m[1])
	}
	return out
}

// X8, X16: models.PublicEventTypes is the one list of public event types;
// docs/api.md's two lists, the OpenAPI document's enums, the webhook page's
// checkboxes and the stream all say exactly it, in its order, so a type
// added to it and missing anywhere fails here.
func TestEventTypesOneList(t *testing.T) {
	readme, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := typesBetween(t, string(readme), "`type` is the public type (", "; empty for"); !slices.Equal(got, models.FeedEventTypes) {
		t.Errorf("docs/api.md's event feed lists %q,\nwant %q", got, models.FeedEventTypes)
	}
	if got := typesBetween(t, string(readme), "and enabled or paused. Types: ", "*Send test event*"); !slices.Equal(got, models.PublicEventTypes) {
		t.Errorf("docs/api.md's webhooks list %q,\nwant %q", got, models.PublicEventTypes)
	}

	raw, err := static.FS.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Ref        string            `json:"$ref"`
		Enum       []any             `json:"enum"`
		Items      *schema           `json:"items"`
		Properties map[string]schema `json:"properties"`
	}
	var api struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &api); err != nil {
		t.Fatal(err)
	}
	s := api.Components.Schemas
	strs := func(v []any) (out []string) {
		for _, x := range v {
			str, _ := x.(string)
			out = append(out, str)
		}
		return out
	}
	if got := strs(s["PublicEventType"].Enum); !slices.Equal(got, models.PublicEventTypes) {
		t.Errorf("openapi PublicEventType enum %q,\nwant %q", got, models.PublicEventTypes)
	}
	if got, want := strs(s["Event"].Properties["type"].Enum), append(slices.Clone(models.FeedEventTypes), ""); !slices.Equal(got, want) {
		t.Errorf("openapi Event.type enum %q,\nwant %q", got, want)
	}
	for _, at := range []struct{ schema, prop string }{{"WebhookBody", "types"}, {"Webhook", "types"}, {"WebhookList", "eventTypes"}} {
		if p := s[at.schema].Properties[at.prop]; p.Items == nil || p.Items.Ref != "#/components/schemas/PublicEventType" {
			t.Errorf("openapi %s.%s is not a list of PublicEventType", at.schema, at.prop)
		}
	}

	// The webhook page offers every type, in order.
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("types@example.com", "Typers")
		rec := app.login(acc).get("/settings/webhooks")
		var boxes []string
		doc(t, rec).Find(`input[type=checkbox][name=types]`).Each(func(_ int, s *goquery.Selection) {
			boxes = append(boxes, s.AttrOr("value", ""))
		})
		if !slices.Equal(boxes, models.PublicEventTypes) {
			t.Errorf("the webhook page offers %q,\nwant %q", boxes, models.PublicEventTypes)
		}
	})

	// The stream and the feed name an event by its stored type when it is one of the list.
	for _, typ := range models.FeedEventTypes {
		if got := models.PublicEventType(models.ClusterEvent{Type: typ, Kind: "status"}); got != typ {
			t.Errorf("an event of type %s is sent as %q", typ, got)
		}
	}
}
