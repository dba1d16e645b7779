package views_test

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
)

// E1: every notification kind renders a one-line subject, a plain-text
// part and an HTML part with its deep links as links, its amounts and
// names, every value escaped; a subject too long is cut at a word's end,
// never mid-word, and the text part is never cut.
func TestEveryNotificationRenders(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	later := at.Add(90 * time.Minute)
	base := "https://deck.example"
	cl := models.ClusterMail{ClusterID: "cl_1", Name: "train", Shape: "2 × 8 × H100 80GB", Place: "Lambda us-east-1",
		USDPerHour: 36_900_000, ReadyAt: &at, LastError: "install failed on node-1", Link: base + "/clusters/cl_1"}
	with := func(topic string, f func(*models.ClusterMail)) models.ClusterMail {
		m := cl
		m.Topic = topic
		if f != nil {
			f(&m)
		}
		return m
	}
	qr := models.MailQuoteRequest{ID: "qr_1", Accelerator: "H100_80GB", Nodes: 16, GPUsPerNode: 8, Fabric: "infiniband",
		StartDate: time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC), DurationDays: 42, BudgetPerHour: 500 * models.Micro}
	longOrg := strings.Repeat("Frobnicating Research Laboratories ", 12) + "International"
	longURL := "https://hooks.example.com/" + strings.Repeat("segment-name/", 15) + "end"

	cases := []struct {
		name    string
		n       models.Notification
		subject string   // exact, "" when clipped (see full)
		full    string   // the subject before the cut, for a clipped one
		want    []string // in the text and in the HTML's text: names, amounts, ids
		links   []string // deep links, linked in the HTML and written in the text
	}{
		{name: "cluster ready", n: with(models.ClusterMailReady, func(m *models.ClusterMail) {
			m.SSH, m.Verification = "ssh -p 2222 ubuntu@203.0.113.7", "all 16 GPUs passed"
		}), subject: "Cluster train is ready", want: []string{"$36.90", "2 × 8 × H100 80GB", "ssh -p 2222 ubuntu@203.0.113.7", "Verification: all 16 GPUs passed"},
			links: []string{base + "/clusters/cl_1"}},
		{name: "cluster healthy", n: with(models.ClusterMailHealthy, nil), subject: "Cluster train is healthy again",
			want: []string{"$36.90", "Lambda us-east-1"}, links: []string{base + "/clusters/cl_1"}},
		{name: "cluster failed", n: with(models.ClusterMailFailed, nil), subject: "Cluster train failed to start",
			want: []string{"install failed on node-1", "nothing was billed"}, links: []string{base + "/clusters/cl_1"}},
		{name: "cluster degraded", n: with(models.ClusterMailDegraded, nil), subject: "Cluster train is degraded",
			want: []string{"install failed on node-1"}, links: []string{base + "/clusters/cl_1"}},
		{name: "cluster verify failed", n: with(models.ClusterMailVerifyFailed, func(m *models.ClusterMail) { m.Verification = "node-1 GPU 3 slow" }),
			subject: "Cluster train failed verification", want: []string{"$36.90", "Verification: node-1 GPU 3 slow"}, links: []string{base + "/clusters/cl_1"}},
		{name: "cluster recovery exhausted", n: with(models.ClusterMailRecoveryExhausted, nil), subject: "Recovery of cluster train gave up",
			want: []string{"$36.90"}, links: []string{base + "/clusters/cl_1"}},
		{name: "cluster node down", n: with(models.ClusterMailNodeDown, func(m *models.ClusterMail) {
			m.Detail, m.AutoRecover, m.RecoverAttempts, m.RecoverCooldown = "node-1 stopped answering", true, 3, 10
		}), subject: "Cluster train is degraded: a machine is down", want: []string{"node-1 stopped answering", "up to 3 times, 10 minutes apart", "$36.90"},
			links: []string{base + "/clusters/cl_1"}},
		{name: "cluster resumed", n: with(models.ClusterMailResumed, nil), subject: "Cluster train is running again",
			want: []string{"$36.90"}, links: []string{base + "/clusters/cl_1"}},
		{name: "cluster resumed degraded", n: with(models.ClusterMailResumedDegraded, nil), subject: "Cluster train is running again, degraded",
			want: []string{"install failed on node-1", "$36.90"}, links: []string{base + "/clusters/cl_1"}},
		{name: "relative link without a base address", n: with(models.ClusterMailFailed, func(m *models.ClusterMail) { m.Link = "/clusters/cl_1" }),
			subject: "Cluster train failed to start", want: []string{"nothing was billed"}, links: []string{"/clusters/cl_1"}},
		{name: "gpu stall", n: models.GPUStallMail{ClusterID: "cl_1", Name: "train", Shape: "2 × 8 × H100 80GB", USDPerHour: 36_900_000,
			Message: "node-5 idle while 7 machines are busy for 12 minutes.", Link: base + "/clusters/cl_1"},
			subject: "Cluster train: node-5 idle while 7 machines are busy for 12 minutes", want: []string{"$36.90", "node-5 idle"},
			links: []string{base + "/clusters/cl_1"}},
		{name: "gpu idle, mail only", n: models.GPUIdleMail{Name: "train", Shape: "2 × 8 × H100 80GB", USDPerHour: 36_900_000, BelowPct: 5,
			Since: at, IdleMinutes: 120, Action: models.IdleMail, Link: base + "/clusters/cl_1"},
			subject: "Cluster train has been idle for 2 h", want: []string{"below 5 %", "$36.90", "only mails"}, links: []string{base + "/clusters/cl_1"}},
		{name: "gpu idle, stop", n: models.GPUIdleMail{Name: "train", Shape: "2 × 8 × H100 80GB", USDPerHour: 36_900_000, BelowPct: 5,
			Since: at, IdleMinutes: 125, Action: "stop", ActAt: later, Link: base + "/clusters/cl_1"},
			subject: "Cluster train is idle and will be stopped at 13:30 UTC, 30 Nov", want: []string{"2 h 5 min", "stopped (compute billing ends"},
			links: []string{base + "/clusters/cl_1"}},
		{name: "gpu idle, terminate", n: models.GPUIdleMail{Name: "train", Shape: "2 × 8 × H100 80GB", USDPerHour: 36_900_000, BelowPct: 5,
			Since: at, IdleMinutes: 90, Action: models.IdleTerminate, ActAt: later, Link: base + "/clusters/cl_1"},
			subject: "Cluster train is idle and will be terminated at 13:30 UTC, 30 Nov", want: []string{"90 minutes", "every machine released"},
			links: []string{base + "/clusters/cl_1"}},
		{name: "budget alert 80 %", n: models.BudgetAlertMail{EnvName: "prod", Month: "2026-11", Percent: 80, Spend: 800 * models.Micro,
			Budget: 1000 * models.Micro, Burn: 40 * models.Micro, ForecastAt: &later, Link: base + "/billing#budgets"},
			subject: "Budget of environment prod: 80% used ($800.00 of $1,000.00)", want: []string{"$40.00/h", "2026-11-30 13:30 UTC"},
			links: []string{base + "/billing#budgets"}},
		{name: "budget reached", n: models.BudgetAlertMail{EnvName: "prod", Month: "2026-11", Percent: 100, Spend: 1000 * models.Micro,
			Budget: 1000 * models.Micro, Running: []string{"eval", "train"}, StopAt: &later, Link: base + "/billing#budgets"},
			subject: "Budget of environment prod reached: $1,000.00 of $1,000.00", want: []string{"(eval, train) are stopped at 2026-11-30 13:30 UTC"},
			links: []string{base + "/billing#budgets"}},
		{name: "budget stopped", n: models.BudgetStoppedMail{EnvName: "prod", Month: "2026-11", Budget: 1000 * models.Micro,
			Spend: 1002_500_000, Stopped: []string{"eval", "train"}, At: at, Link: base + "/billing#budgets"},
			subject: "Clusters stopped in environment prod by its monthly budget", want: []string{"$1,002.50", "$1,000.00", "eval, train"},
			links: []string{base + "/billing#budgets"}},
		{name: "balance low", n: models.BalanceMail{Topic: models.BalanceMailLow, Balance: 12_340_000, Burn: 36_900_000,
			Volumes: 250_000, Grace: time.Hour, TerminateGrace: 72 * time.Hour, StopAt: later, Link: base + "/billing"},
			subject: "Your Clusterdeck balance is running low", want: []string{"$12.34", "$36.90", "after 1 hour", "unpaid 72 hours", "$0.25 per hour"},
			links: []string{base + "/billing"}},
		{name: "balance out", n: models.BalanceMail{Topic: models.BalanceMailLow, Balance: -1_500_000, Burn: 36_900_000,
			Grace: time.Hour, TerminateGrace: 72 * time.Hour, StopAt: later, Link: base + "/billing"},
			subject: "Your Clusterdeck balance has run out", want: []string{"-$1.50", "stopped at 2026-11-30 13:30 UTC"}, links: []string{base + "/billing"}},
		{name: "balance stopped", n: models.BalanceMail{Topic: models.BalanceMailStopped, Balance: -1_500_000, Grace: time.Hour,
			TerminateGrace: 72 * time.Hour, Clusters: []string{"train"}, Link: base + "/billing"},
			subject: "Your clusters are being stopped: the balance ran out", want: []string{"being stopped: train.", "Unpaid 72 hours from now"},
			links: []string{base + "/billing"}},
		{name: "balance terminated", n: models.BalanceMail{Topic: models.BalanceMailTerminated, Balance: -3_000_000, Grace: time.Hour,
			TerminateGrace: 90 * time.Minute, Clusters: []string{"train", "eval"}, Link: base + "/billing"},
			subject: "Your stopped clusters were terminated: the balance stayed unpaid", want: []string{"-$3.00", "90 minutes", "terminated: train, eval."},
			links: []string{base + "/billing"}},
		{name: "charge declined", n: models.ChargeFailedMail{ChargeID: "ch_1", Amount: 50 * models.Micro, FailureCode: "card_declined"},
			subject: "Auto-recharge of $50.00 was declined", want: []string{"(card_declined)", "Auto-recharge is paused"}},
		{name: "charge needs confirmation", n: models.ChargeFailedMail{ChargeID: "ch_1", Amount: 50 * models.Micro, AuthenticationRequired: true},
			subject: "Auto-recharge of $50.00 needs your bank's confirmation", want: []string{"nothing was charged"}},
		{name: "price above", n: models.PriceAboveMail{Provider: "lambda", ClusterID: "cl_1", OrgID: "org_1", Nodes: 2, OfferID: "lambda:h100",
			Billed: 27_920_000, Upstream: 23_920_000, Locked: 24_990_000},
			subject: "lambda bills above the launch cost for cluster cl_1", want: []string{"$27.92", "$23.92", "$24.99", "org_1"}},
		{name: "webhook paused", n: models.WebhookPausedMail{EndpointID: "wh_1", URL: "https://hooks.example.com/in",
			Reason: "Every delivery failed since 2026-11-27 12:00 UTC.", Link: base + "/settings/webhooks"},
			subject: "Webhook endpoint paused: https://hooks.example.com/in", want: []string{"wh_1", "failed since 2026-11-27 12:00 UTC"},
			links: []string{base + "/settings/webhooks", "https://hooks.example.com/in"}},
		{name: "webhook paused, long address", n: models.WebhookPausedMail{EndpointID: "wh_2", URL: longURL, Reason: "Every delivery failed.",
			Link: base + "/settings/webhooks"}, full: "Webhook endpoint paused: " + longURL, want: []string{longURL},
			links: []string{base + "/settings/webhooks"}},
		{name: "password reset", n: models.PasswordResetMail{Name: "Ada", ExpiresAt: later, Link: base + "/reset-password/tok"},
			subject: "Reset your Clusterdeck password", want: []string{"Hello Ada", "2026-11-30 13:30 UTC"}, links: []string{base + "/reset-password/tok"}},
		{name: "password changed, keys live", n: models.PasswordChangedMail{Name: "Ada", IP: "198.51.100.4",
			Keys: []models.MailAPIKeys{{Name: "ci", Prefix: "cdk_ab12", OrgName: "Acme", EnvName: "prod"}}},
			subject: "Your Clusterdeck password was changed", want: []string{"198.51.100.4", "ci (cdk_ab12…), organisation Acme, environment prod"}},
		{name: "password changed, keys revoked", n: models.PasswordChangedMail{Name: "Ada", Revoked: true},
			subject: "Your Clusterdeck password was changed", want: []string{"an unknown address", "Every API key you created was revoked"}},
		{name: "invite, markup in a name", n: models.InviteMail{Inviter: "Ada", OrgName: "Acme <b>&</b> Co", Role: string(models.RoleAdmin),
			ExpiresAt: later, Link: base + "/invites/tok"},
			subject: "Ada invited you to Acme <b>&</b> Co on Clusterdeck", want: []string{"Acme <b>&</b> Co", "as admin", "2026-11-30 13:30 UTC"},
			links: []string{base + "/invites/tok"}},
		{name: "quote received", n: models.QuoteReceivedMail{ContactName: "Ada", ContactEmail: "ada@acme.example", Request: qr,
			Link: base + "/quote-requests/qr_1"},
			subject: "We received your quote request for 16 × 8 × H100 80GB", want: []string{"qr_1", "InfiniBand", "$500.00/h", "6 weeks", "2027-01-15"},
			links: []string{base + "/quote-requests/qr_1"}},
		{name: "quote to sales, long organisation name", n: models.QuoteSalesMail{OrgID: "org_1", OrgName: longOrg, Requester: "ada@acme.example",
			ContactName: "Ada", ContactEmail: "ada@acme.example", ContactPhone: "+1 555 0100", Request: qr, Link: base + "/admin/quote-requests?status=new"},
			full: "Quote request qr_1: 16 × 8 × H100 80GB for " + strings.Join(strings.Fields(longOrg), " "),
			want: []string{longOrg, "+1 555 0100", "(none)", "$500.00/h"}, links: []string{base + "/admin/quote-requests?status=new"}},
		{name: "quote status", n: models.QuoteStatusMail{ContactName: "Ada", Status: models.CapacityWon, Request: qr, Link: base + "/quote-requests/qr_1"},
			subject: "Your quote request for 16 × 8 × H100 80GB is now won", want: []string{"reserved capacity is agreed", "qr_1"},
			links: []string{base + "/quote-requests/qr_1"}},
		{name: "private offer", n: models.PrivateOfferMail{ContactName: "Ada", RequestID: "qr_1", OfferID: "po_1", Accelerator: "H100_80GB",
			Nodes: 4, GPUsPerNode: 8, Location: "us-east-1", LocationName: "Virginia", Interconnect: "infiniband", MachineHour: 18_400_000,
			ValidUntil: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Link: base + "/clusters/new?private=po_1"},
			subject: "Your private offer for 4 × 8 × H100 80GB is ready", want: []string{"$18.40 per machine-hour", "$73.60/h", "2026-12-31", "po_1"},
			links: []string{base + "/clusters/new?private=po_1"}},
		{name: "reservation ready", n: models.ReservationMail{ReservationID: "rsv_1", What: "handed-over", Shape: "4 × 8 × H100 80GB",
			EndAt: time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), Message: "Handed over verified at 2027-01-04 00:00 UTC; billing starts now.",
			Link: base + "/reservations/rsv_1"},
			subject: "Reservation rsv_1 is ready: 4 × 8 × H100 80GB", want: []string{"Handed over verified", "billing starts now"},
			links: []string{base + "/reservations/rsv_1"}},
		{name: "reservation ending", n: models.ReservationMail{ReservationID: "rsv_1", What: "ending-2", Shape: "4 × 8 × H100 80GB",
			EndAt: time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), Message: "The term ends in an hour; the machines are released then.",
			Link: base + "/reservations/rsv_1"},
			subject: "Reservation rsv_1 ends 2027-02-01T00:00:00Z", want: []string{"ends in an hour"},
			links: []string{base + "/reservations/rsv_1"}},
	}

	covered := map[string]bool{}
	topics := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			covered[tc.n.NotificationKind()] = true
			switch m := tc.n.(type) {
			case models.ClusterMail:
				topics["cluster:"+m.Topic] = true
			case models.BalanceMail:
				topics["balance:"+m.Topic] = true
			}
			p, err := views.RenderMail(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			// The subject: one line, whole, or cut at a word's end.
			if strings.ContainsAny(p.Subject, "\r\n") || utf8.RuneCountInString(p.Subject) > views.MailSubjectMax {
				t.Errorf("subject %q is not one line of at most %d characters", p.Subject, views.MailSubjectMax)
			}
			if tc.full == "" {
				if p.Subject != tc.subject {
					t.Errorf("subject %q, want %q", p.Subject, tc.subject)
				}
			} else {
				cut, ok := strings.CutSuffix(p.Subject, "…")
				if !ok || !strings.HasPrefix(tc.full, cut) || len(cut) < len(tc.full)/3 {
					t.Fatalf("subject %q is not %q cut at a word's end", p.Subject, tc.full)
				}
				next, _ := utf8.DecodeRuneInString(tc.full[len(cut):])
				last, _ := utf8.DecodeLastRuneInString(cut)
				if !strings.ContainsRune(" /?&.-", next) && !strings.ContainsRune("/?&.-", last) {
					t.Errorf("subject cut mid-word: %q | %q", cut, tc.full[len(cut):])
				}
			}
			// The plain-text part: present, whole.
			if strings.TrimSpace(p.Text) == "" {
				t.Errorf("plain-text part %q", p.Text)
			}
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(p.HTML))
			if err != nil {
				t.Fatal(err)
			}
			if title := doc.Find(`[data-testid=mail-title]`).Text(); title != p.Subject {
				t.Errorf("HTML title %q, want the subject %q", title, p.Subject)
			}
			if doc.Find("body b, body script").Length() != 0 {
				t.Errorf("a value reached the HTML unescaped:\n%s", p.HTML)
			}
			html := strings.Join(strings.Fields(doc.Find("body").Text()), " ")
			for _, w := range tc.want {
				if !strings.Contains(p.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, p.Text)
				}
				if !strings.Contains(html, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("HTML lacks %q:\n%s", w, html)
				}
			}
			for _, l := range tc.links {
				if !strings.Contains(p.Text, l) {
					t.Errorf("text lacks the link %s:\n%s", l, p.Text)
				}
				if doc.Find(`a[href="`+l+`"]`).Length() == 0 {
					t.Errorf("HTML does not link %s:\n%s", l, p.HTML)
				}
			}
			doc.Find("a[href]").Each(func(_ int, a *goquery.Selection) {
				if href := a.AttrOr("href", ""); !strings.Contains(p.Text, href) {
					t.Errorf("HTML links %s, which the text does not give", href)
				}
			})
		})
	}
	if kinds := models.NotificationKinds(); len(covered) != len(kinds) {
		for _, k := range kinds {
			if !covered[k] {
				t.Errorf("notification kind %q has no sample here: render it and add one", k)
			}
		}
	}
	for _, topic := range []string{models.ClusterMailReady, models.ClusterMailHealthy, models.ClusterMailFailed, models.ClusterMailDegraded,
		models.ClusterMailVerifyFailed, models.ClusterMailRecoveryExhausted, models.ClusterMailNodeDown, models.ClusterMailResumed,
		models.ClusterMailResumedDegraded} {
		if !topics["cluster:"+topic] {
			t.Errorf("cluster mail topic %q has no sample", topic)
		}
	}
	for _, topic := range []string{models.BalanceMailLow, models.BalanceMailStopped, models.BalanceMailTerminated} {
		if !topics["balance:"+topic] {
			t.Errorf("balance mail topic %q has no sample", topic)
		}
	}
}

// E1: a topic or kind without a view is an error, never an empty mail.
func TestUnknownNotificationIsRefused(t *testing.T) {
	if _, err := views.RenderMail(models.ClusterMail{Topic: "exploded", Name: "x"}); err == nil {
		t.Error("a cluster mail of an unknown topic rendered")
	}
	if _, err := views.RenderMail(models.BalanceMail{Topic: "?"}); err == nil {
		t.Error("a balance mail of an unknown topic rendered")
	}
	if _, err := views.RenderOutbox(models.OutboxMail{Kind: "nope", Data: "{}"}); err == nil {
		t.Error("an unknown kind rendered")
	}
	if _, err := views.RenderOutbox(models.OutboxMail{Kind: models.KindInviteMail, Data: "{broken"}); err == nil {
		t.Error("broken data rendered")
	}
	if !slices.IsSorted(models.NotificationKinds()) {
		t.Error("kinds are not sorted")
	}
}

// The mail job renders each typed mail when it sends it: the ready mail
// (its own view) and a laid-out one (the balance mail) cost this much.
func BenchmarkRenderMail(b *testing.B) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, n := range []models.Notification{
		models.ClusterMail{Topic: models.ClusterMailReady, ClusterID: "cl_1", Name: "train", Shape: "2 × 8 × H100 80GB",
			Place: "Lambda us-east-1", USDPerHour: 36_900_000, ReadyAt: &at, SSH: "ssh -p 2222 ubuntu@203.0.113.7",
			Link: "https://deck.example/clusters/cl_1"},
		models.BalanceMail{Topic: models.BalanceMailLow, Balance: 12_340_000, Burn: 36_900_000, Volumes: 250_000,
			Grace: time.Hour, TerminateGrace: 72 * time.Hour, StopAt: at, Link: "https://deck.example/billing"},
	} {
		b.Run(n.NotificationKind(), func(b *testing.B) {
			for b.Loop() {
				if _, err := views.RenderMail(n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
