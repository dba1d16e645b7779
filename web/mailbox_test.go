package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

// E2: the development mailbox shows a typed notification as the mail job
// sends it (subject, text, HTML part), a mail queued with its words as
// stored, and a row this build cannot render says why instead of failing
// the page.
func TestDevMailboxShowsMailsAsSent(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		exp := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
		if err := app.store.Notify(ctx, "invite:mb1", "bob@acme.example", models.InviteMail{Inviter: "Ada", OrgName: "Acme <b>Labs</b>",
			Role: string(models.RoleMember), ExpiresAt: exp, Link: "https://deck.example/invites/tok"}); err != nil {
			t.Fatal(err)
		}
		if err := app.store.EnqueueMail(ctx, models.Mail{Key: "old:1", To: "carol@acme.example", Subject: "Queued with its words", Text: "as stored\n"}); err != nil {
			t.Fatal(err)
		}
		if err := app.db.Exec(`UPDATE mail_outbox SET kind = 'from_a_newer_build' WHERE idempotency_key = 'old:1'`).Error; err != nil {
			t.Fatal(err)
		}
		if err := app.store.EnqueueMail(ctx, models.Mail{Key: "old:2", To: "dan@acme.example", Subject: "Stored subject", Text: "stored text\n"}); err != nil {
			t.Fatal(err)
		}
		dev := app.client()
		dev.ip = "127.0.0.1"
		rec := dev.get("http://localhost:8080/dev/mailbox")
		if rec.Code != http.StatusOK {
			t.Fatalf("mailbox: %d", rec.Code)
		}
		d := doc(t, rec)
		rows := map[string]*goquery.Selection{}
		d.Find(`[data-testid=mail-row]`).Each(func(_ int, row *goquery.Selection) {
			for _, to := range []string{"bob@", "carol@", "dan@"} {
				if strings.Contains(row.Text(), to) {
					rows[to] = row
				}
			}
		})
		if len(rows) != 3 {
			t.Fatalf("mailbox rows %d, want 3:\n%s", len(rows), d.Text())
		}
		if !strings.Contains(rows["bob@"].Text(), "Ada invited you to Acme <b>Labs</b> on Clusterdeck") {
			t.Errorf("typed row: %s", rows["bob@"].Text())
		}
		if !strings.Contains(rows["carol@"].Text(), "cannot render") || !strings.Contains(rows["carol@"].Text(), "from_a_newer_build") {
			t.Errorf("unrenderable row: %s", rows["carol@"].Text())
		}
		if !strings.Contains(rows["dan@"].Text(), "Stored subject") {
			t.Errorf("stored row: %s", rows["dan@"].Text())
		}
		id := strings.TrimPrefix(rows["bob@"].Find(`a[href^="/dev/mailbox/"]`).AttrOr("href", ""), "/dev/mailbox/")
		p := doc(t, dev.get("http://localhost:8080/dev/mailbox/"+id))
		if s := p.Find(`[data-testid=mail-subject]`).Text(); s != "Ada invited you to Acme <b>Labs</b> on Clusterdeck" {
			t.Errorf("mail page subject %q", s)
		}
		if txt := p.Find(`[data-testid=mail-text]`).Text(); !strings.Contains(txt, "https://deck.example/invites/tok") || !strings.Contains(txt, "2026-12-03 12:00 UTC") {
			t.Errorf("mail page text %q", txt)
		}
		if !strings.Contains(p.Find("details pre").Text(), `<a href="https://deck.example/invites/tok"`) {
			t.Errorf("mail page lacks the HTML part's link:\n%s", p.Find("details pre").Text())
		}
	})
}
