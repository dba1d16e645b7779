package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

func validCapacityInput(orgID, userID string) models.QuoteRequestInput {
	return models.QuoteRequestInput{OrgID: orgID, UserID: userID, Requester: "someone",
		Accelerator: "H100_80GB", Nodes: 128, GPUsPerNode: 8, Fabric: "infiniband", Location: "us-east",
		StartDate: "2027-01-04", Duration: 4, DurationUnit: "weeks", Budget: "900",
		ContactName: "Ada", ContactEmail: "ada@example.com", ContactPhone: "+1 (555) 010-0199", Notes: "pretraining"}
}

var notify = models.CapacityNotify{BaseURL: "https://deck.example", SalesEmail: "deals@example.com"}

func capacityMails(t *testing.T, s *models.Store) map[string]models.OutboxMail {
	t.Helper()
	all, err := views.RenderedMails(s.OutboxMails(context.Background(), 1000))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]models.OutboxMail{}
	for _, m := range all {
		if strings.HasPrefix(m.Key, "capacity-request:") {
			if _, dup := out[m.Key]; dup {
				t.Errorf("mail %s queued twice", m.Key)
			}
			out[m.Key] = m
		}
	}
	return out
}

// RQ1: every field is checked, problems are keyed by the form's names, and
// bad input stores nothing (A4).
func TestQuoteRequestValidation(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		s, _ := acctStore(t, db)
		ctx := context.Background()
		u, org := acctSignup(t, s, "ada@example.com", "Ada Labs")
		cases := []struct {
			field string
			edit  func(in *models.QuoteRequestInput)
		}{
			{"accelerator", func(in *models.QuoteRequestInput) { in.Accelerator = "B9000" }},
			{"nodes", func(in *models.QuoteRequestInput) { in.Nodes = 1 }},
			{"nodes", func(in *models.QuoteRequestInput) { in.Nodes = 513 }},
			{"gpus_per_node", func(in *models.QuoteRequestInput) { in.GPUsPerNode = 9 }},
			{"gpus_per_node", func(in *models.QuoteRequestInput) { in.GPUsPerNode = 0 }},
			{"fabric", func(in *models.QuoteRequestInput) { in.Fabric = "nvlink" }},
			{"location", func(in *models.QuoteRequestInput) { in.Location = strings.Repeat("x", 129) }},
			{"start_date", func(in *models.QuoteRequestInput) { in.StartDate = "" }},
			{"start_date", func(in *models.QuoteRequestInput) { in.StartDate = "04/01/2027" }},
			{"start_date", func(in *models.QuoteRequestInput) { in.StartDate = "2026-11-29" }}, // yesterday
			{"start_date", func(in *models.QuoteRequestInput) { in.StartDate = "2029-01-01" }},
			{"duration", func(in *models.QuoteRequestInput) { in.Duration = 0 }},
			{"duration", func(in *models.QuoteRequestInput) { in.Duration = 157 }}, // weeks: over three years
			{"duration", func(in *models.QuoteRequestInput) { in.DurationUnit = "fortnights" }},
			{"duration", func(in *models.QuoteRequestInput) { in.Duration = 1 << 62 }},
			{"budget", func(in *models.QuoteRequestInput) { in.Budget = "lots" }},
			{"budget", func(in *models.QuoteRequestInput) { in.Budget = "0" }},
			{"budget", func(in *models.QuoteRequestInput) { in.Budget = "-5" }},
			{"contact_name", func(in *models.QuoteRequestInput) { in.ContactName = "  " }},
			{"contact_email", func(in *models.QuoteRequestInput) { in.ContactEmail = "ada at example" }},
			{"contact_phone", func(in *models.QuoteRequestInput) { in.ContactPhone = "call me" }},
			{"contact_phone", func(in *models.QuoteRequestInput) { in.ContactPhone = "12" }},
			{"notes", func(in *models.QuoteRequestInput) { in.Notes = strings.Repeat("é", models.CapacityMaxNotes+1) }},
		}
		for _, tc := range cases {
			in := validCapacityInput(org.ID, u.ID)
			tc.edit(&in)
			_, err := s.CreateQuoteRequest(ctx, in, notify, models.AuditEntry{Actor: u.Email})
			if !fieldErr(err, tc.field) {
				t.Errorf("%s: err = %v, want a problem with %s", tc.field, err, tc.field)
			}
		}
		if rs, _ := s.QuoteRequests(ctx, org.ID); len(rs) != 0 {
			t.Errorf("bad input stored %d requests", len(rs))
		}
		if m := capacityMails(t, s); len(m) != 0 {
			t.Errorf("bad input queued mails: %v", m)
		}

		// The bounds themselves are fine: 2 and 512 machines, today, one day,
		// three years, no budget, no phone, fabric left empty (any).
		in := validCapacityInput(org.ID, u.ID)
		in.Nodes, in.StartDate, in.Duration, in.DurationUnit, in.Budget, in.ContactPhone, in.Fabric = 2, "2026-11-30", 1, "", "", "", ""
		r, err := s.CreateQuoteRequest(ctx, in, notify, models.AuditEntry{Actor: u.Email})
		if err != nil {
			t.Fatal(err)
		}
		if r.Fabric != "any" || r.DurationDays != 1 || r.BudgetPerHour != 0 || r.StartDay() != "2026-11-30" {
			t.Errorf("defaults: %+v", r)
		}
		in = validCapacityInput(org.ID, u.ID)
		in.Nodes, in.Duration, in.DurationUnit = 512, models.CapacityMaxDays, "days"
		if _, err := s.CreateQuoteRequest(ctx, in, notify, models.AuditEntry{Actor: u.Email}); err != nil {
			t.Errorf("512 machines for three years: %v", err)
		}
	})
}

// RQ1, RQ2, E1: a request is stored with its two mails and its audit entry;
// lists are per org, newest first; status changes mail the customer once each.
func TestQuoteRequestLifecycle(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		s, clock := acctStore(t, db)
		ctx := context.Background()
		u, org := acctSignup(t, s, "ada@example.com", "Ada Labs")
		other, otherOrg := acctSignup(t, s, "bo@example.org", "Bo Corp")

		in := validCapacityInput(org.ID, u.ID)
		in.ContactEmail = "procurement@example.com" // someone else to call; mail still goes to the account
		first, err := s.CreateQuoteRequest(ctx, in, notify, models.AuditEntry{Actor: u.Email, IP: "192.0.2.7"})
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != models.CapacityNew || first.BudgetPerHour != 900*models.Micro || first.DurationDays != 28 ||
			first.Shape() != "128 × 8 × H100 80GB" || !strings.HasPrefix(first.ID, "qr_") {
			t.Errorf("stored %+v", first)
		}
		mails := capacityMails(t, s)
		cust, sales := mails["capacity-request:"+first.ID+":received"], mails["capacity-request:"+first.ID+":sales"]
		if len(mails) != 2 || cust.To != "ada@example.com" || sales.To != "deals@example.com" {
			t.Fatalf("mails after create: %+v", mails)
		}
		for _, want := range []string{"128 × 8 × H100 80GB", "InfiniBand", "2027-01-04, for 4 weeks", "$900.00/h", "https://deck.example/quote-requests/" + first.ID} {
			if !strings.Contains(cust.Text, want) {
				t.Errorf("customer mail lacks %q:\n%s", want, cust.Text)
			}
		}
		for _, want := range []string{"Ada Labs", "procurement@example.com", "+1 (555) 010-0199", "pretraining", "https://deck.example/admin/quote-requests"} {
			if !strings.Contains(sales.Text, want) {
				t.Errorf("sales mail lacks %q:\n%s", want, sales.Text)
			}
		}
		recs, _, _ := s.AuditRecords(ctx, org.ID, 0, 10)
		if len(recs) == 0 || recs[0].Action != "quote_request.create" || recs[0].Target != first.ID || recs[0].IP != "192.0.2.7" {
			t.Errorf("audit after create: %+v", recs)
		}

		clock.Advance(time.Minute)
		second, err := s.CreateQuoteRequest(ctx, validCapacityInput(org.ID, u.ID), notify, models.AuditEntry{Actor: u.Email})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		theirs, err := s.CreateQuoteRequest(ctx, validCapacityInput(otherOrg.ID, other.ID), models.CapacityNotify{}, models.AuditEntry{Actor: other.Email})
		if err != nil {
			t.Fatal(err)
		}
		if m := capacityMails(t, s)["capacity-request:"+theirs.ID+":sales"]; m.To != models.DefaultSalesEmail {
			t.Errorf("without SALES_EMAIL sales mail goes to %q", m.To)
		}
		list, _ := s.QuoteRequests(ctx, org.ID)
		if len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID {
			t.Errorf("org list = %+v, want newest first and only Ada Labs'", list)
		}
		if _, err := s.QuoteRequestForOrg(ctx, otherOrg.ID, first.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("another org's request: %v, want ErrNotFound", err)
		}

		// Operators: every org, filtered by status, with counts.
		all, _ := s.AdminQuoteRequests(ctx, "")
		if len(all) != 3 || all[0].ID != theirs.ID || all[0].OrgName != "Bo Corp" {
			t.Errorf("admin list = %+v", all)
		}
		if _, err := s.AdminQuoteRequests(ctx, "pending"); !fieldErr(err, "status") {
			t.Errorf("unknown filter: %v", err)
		}

		op := models.AuditEntry{Actor: "op@deck.example", UserID: "usr_op", IP: "198.51.100.1"}
		r, changed, err := s.SetQuoteRequestStatus(ctx, first.ID, "contacted", "called Ada", notify, op)
		if err != nil || !changed || r.Status != models.CapacityContacted || r.OperatorNote != "called Ada" || r.StatusVersion != 1 {
			t.Fatalf("set contacted: %+v %v %v", r, changed, err)
		}
		// A note-only save changes no status and mails nobody.
		if r, changed, err = s.SetQuoteRequestStatus(ctx, first.ID, "contacted", "called Ada twice", notify, op); err != nil || changed || r.StatusVersion != 1 {
			t.Errorf("note-only save: %+v %v %v", r, changed, err)
		}
		if _, _, err := s.SetQuoteRequestStatus(ctx, first.ID, "quoted", "", notify, op); err != nil {
			t.Fatal(err)
		}
		// Back to contacted is another event: another mail.
		if r, _, err = s.SetQuoteRequestStatus(ctx, first.ID, "contacted", "", notify, op); err != nil || r.StatusVersion != 3 {
			t.Fatalf("back to contacted: %+v %v", r, err)
		}
		mails = capacityMails(t, s)
		for v, st := range map[string]string{"1": "contacted", "2": "quoted", "3": "contacted"} {
			m, ok := mails["capacity-request:"+first.ID+":status:"+v]
			if !ok || m.To != "ada@example.com" || !strings.HasSuffix(m.Subject, "is now "+st) {
				t.Errorf("status mail %s: %+v", v, m)
			}
			if strings.Contains(m.Text, "called Ada") {
				t.Error("the internal note reached the customer's mail")
			}
		}
		if len(mails) != 9 { // 3 × 2 on create, 3 status changes
			t.Errorf("%d capacity mails, want 9", len(mails))
		}
		recs, _, _ = s.AuditRecords(ctx, org.ID, 0, 10)
		var actions []string
		for _, rec := range recs {
			actions = append(actions, rec.Action+" "+rec.Detail)
			if rec.Action == "quote_request.status" && (rec.Actor != "op@deck.example" || rec.Target != first.ID) {
				t.Errorf("status audit: %+v", rec)
			}
		}
		want := "quote_request.status contacted → quoted"
		if !strings.Contains(strings.Join(actions, "|"), want) || !strings.Contains(strings.Join(actions, "|"), "quote_request.note") {
			t.Errorf("audit = %v, want %q and a note entry", actions, want)
		}

		counts, _ := s.QuoteRequestCounts(ctx)
		if counts[models.CapacityNew] != 2 || counts[models.CapacityContacted] != 1 {
			t.Errorf("counts = %v", counts)
		}
		contacted, _ := s.AdminQuoteRequests(ctx, "contacted")
		if len(contacted) != 1 || contacted[0].ID != first.ID {
			t.Errorf("filtered = %+v", contacted)
		}

		// Bad input changes nothing.
		if _, _, err := s.SetQuoteRequestStatus(ctx, first.ID, "maybe", "", notify, op); !fieldErr(err, "status") {
			t.Errorf("bad status: %v", err)
		}
		if _, _, err := s.SetQuoteRequestStatus(ctx, first.ID, "won", strings.Repeat("x", models.CapacityMaxOpNote+1), notify, op); !fieldErr(err, "operator_note") {
			t.Errorf("long note: %v", err)
		}
		if _, _, err := s.SetQuoteRequestStatus(ctx, "qr_nope", "won", "", notify, op); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("unknown id: %v", err)
		}
		if got, _ := s.QuoteRequestByID(ctx, first.ID); got.Status != models.CapacityContacted {
			t.Errorf("refused updates changed the status to %s", got.Status)
		}

		// Once the requester has left the org, mail goes to the contact given.
		member, err := s.Member(ctx, org.ID, u.ID)
		if err != nil || member.Role != models.RoleOwner {
			t.Fatal(member, err)
		}
		if err := db.Exec("DELETE FROM memberships WHERE org_id = ? AND user_id = ?", org.ID, u.ID).Error; err != nil {
			t.Fatal(err)
		}
		if r, _, err = s.SetQuoteRequestStatus(ctx, first.ID, "won", "", notify, op); err != nil {
			t.Fatal(err)
		}
		if m := capacityMails(t, s)["capacity-request:"+first.ID+":status:4"]; m.To != "procurement@example.com" {
			t.Errorf("after the requester left, mail went to %q", m.To)
		}
	})
}

// The table has a column for every field of the live model.
func TestQuoteRequestSchemaMatchesModel(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(&models.QuoteRequest{}); err != nil {
			t.Fatal(err)
		}
		for _, f := range stmt.Schema.Fields {
			if f.DBName != "" && !db.Migrator().HasColumn(&models.QuoteRequest{}, f.DBName) {
				t.Errorf("capacity_requests.%s: no column %q", f.Name, f.DBName)
			}
		}
	})
}
