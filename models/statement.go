package models

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sort"
	"time"
)

// UsageWindow bounds what the billing page, its CSV and the billing API
// show: periods that start in [From, To). A zero window is all time.
type UsageWindow struct{ From, To time.Time }

// MonthOf is the calendar month (UTC) holding t.
func MonthOf(t time.Time) UsageWindow {
	t = t.UTC()
	from := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return UsageWindow{From: from, To: from.AddDate(0, 1, 0)}
}

// ParseMonth reads "YYYY-MM" as a month's window.
func ParseMonth(s string) (UsageWindow, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return UsageWindow{}, FieldErrors{"month": "Give a month like 2026-04."}
	}
	return MonthOf(t), nil
}

// Month is the window's month as "YYYY-MM".
func (w UsageWindow) Month() string { return w.From.Format("2006-01") }

func (w UsageWindow) contains(t time.Time) bool {
	return w.To.IsZero() || (!t.Before(w.From) && t.Before(w.To))
}

// Transaction statuses shown on the billing page (B1): the ledger's own,
// and Accumulating for the open usage period (computed, never written).
const EntryAccumulating = "accumulating"

// Transaction is one line of the billing page's transactions: a deposit,
// top-up, refund or adjustment as written, a cluster's usage in the window
// summed into one line, its open period, or a top-up still being paid.
type Transaction struct {
	At          time.Time
	Kind        string
	Status      string
	Description string
	ClusterID   string
	Amount      Money // signed: usage negative
}

// Transactions lists the organisation's transactions in w, newest first,
// with usage summarised per cluster (B1): one query each for entries,
// usage sums and pending top-ups; usage lines give the open periods.
func (s *Store) Transactions(ctx context.Context, orgID string, w UsageWindow, lines []ClusterUsage) ([]Transaction, error) {
	db := s.db.WithContext(ctx)
	var entries []LedgerEntry
	err := db.Where("org_id = ? AND kind <> ? AND created_at >= ? AND created_at < ?", orgID, LedgerUsage, w.From, w.To).
		Order("created_at DESC, id DESC").Limit(500).Find(&entries).Error
	if err != nil {
		return nil, fmt.Errorf("models: transactions of %s: %w", orgID, err)
	}
	out := make([]Transaction, 0, len(entries)+2*len(lines))
	for _, e := range entries {
		out = append(out, Transaction{At: e.CreatedAt, Kind: e.Kind, Status: e.Status, Description: e.Description,
			ClusterID: e.ClusterID, Amount: e.Amount})
	}
	var sums []struct {
		ClusterID string
		Amount    Money
		Last      aggTime
	}
	err = db.Table("ledger_entries").Select("cluster_id, SUM(amount) AS amount, MAX(period_end) AS last").
		Where("org_id = ? AND kind = ? AND period_start >= ? AND period_start < ?", orgID, LedgerUsage, w.From, w.To).
		Group("cluster_id").Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("models: usage of %s: %w", orgID, err)
	}
	names := map[string]string{}
	for _, l := range lines {
		names[l.Cluster.ID] = l.Cluster.Name
	}
	for _, u := range sums {
		out = append(out, Transaction{At: u.Last.Time, Kind: LedgerUsage, Status: EntryCompleted,
			Description: "Cluster usage — " + nameOr(names, u.ClusterID), ClusterID: u.ClusterID, Amount: u.Amount})
	}
	now := s.Now()
	for _, l := range lines {
		if l.Accumulating > 0 {
			out = append(out, Transaction{At: now, Kind: LedgerUsage, Status: EntryAccumulating,
				Description: "Cluster usage — " + l.Cluster.Name + " (this hour so far)", ClusterID: l.Cluster.ID, Amount: -l.Accumulating})
		}
	}
	var pending []TopUp
	err = db.Where("org_id = ? AND status IN ? AND created_at >= ? AND created_at < ?", orgID, []string{TopUpPending, TopUpFailed}, w.From, w.To).
		Order("created_at DESC").Limit(100).Find(&pending).Error
	if err != nil {
		return nil, fmt.Errorf("models: pending top-ups of %s: %w", orgID, err)
	}
	for _, t := range pending {
		tr := Transaction{At: t.CreatedAt, Kind: "top_up", Status: EntryPending, Description: "Top-up (waiting for the payment)", Amount: t.Amount}
		if t.Status == TopUpFailed {
			tr.Status, tr.Description = EntryFailed, "Top-up (the payment failed: nothing was credited)"
		}
		out = append(out, tr)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out, nil
}

func nameOr(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return id
}

// DailySpend is the usage of each of the n days ending with today (UTC),
// oldest first: written periods by the day they start, plus the open
// period today. One query.
func (s *Store) DailySpend(ctx context.Context, orgID string, n int, accumulating Money) ([]Money, error) {
	now := s.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	from := today.AddDate(0, 0, 1-n)
	var rows []struct {
		PeriodStart time.Time
		Amount      Money
	}
	err := s.db.WithContext(ctx).Table("ledger_entries").Select("period_start, SUM(amount) AS amount").
		Where("org_id = ? AND kind = ? AND period_start >= ?", orgID, LedgerUsage, from).
		Group("period_start").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("models: daily spend of %s: %w", orgID, err)
	}
	out := make([]Money, n)
	for _, r := range rows {
		if d := int(r.PeriodStart.UTC().Sub(from) / (24 * time.Hour)); d >= 0 && d < n {
			out[d] -= r.Amount
		}
	}
	out[n-1] += accumulating
	return out, nil
}

// Spend is what usage lines cost in their window: written and open.
func Spend(lines []ClusterUsage) Money {
	var sum Money
	for _, l := range lines {
		sum += l.Completed + l.Accumulating
	}
	return sum
}

// aggTime scans an aggregate of a time column: PostgreSQL gives a time,
// SQLite its stored text (an aggregate loses the column's declared type).
type aggTime struct{ time.Time }

// Value implements driver.Valuer (gorm asks for both).
func (t aggTime) Value() (driver.Value, error) { return t.Time, nil }

// Scan implements sql.Scanner.
func (t *aggTime) Scan(v any) error {
	switch v := v.(type) {
	case time.Time:
		t.Time = v
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	case nil:
		t.Time = time.Time{}
	default:
		return fmt.Errorf("models: a time cannot be %T", v)
	}
	return nil
}

func (t *aggTime) parse(s string) error {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano, "2006-01-02 15:04:05"} {
		if p, err := time.Parse(layout, s); err == nil {
			t.Time = p
			return nil
		}
	}
	return fmt.Errorf("models: cannot read time %q", s)
}

// UsageForClusterIn is one cluster's usage line in window w (the line's
// machines on the billing page); another organisation's cluster is
// ErrNotFound.
func (s *Store) UsageForClusterIn(ctx context.Context, orgID, clusterID string, w UsageWindow) (ClusterUsage, error) {
	c, err := s.ClusterForOrg(ctx, orgID, clusterID)
	if err != nil {
		return ClusterUsage{}, err
	}
	out, err := s.usageOf(ctx, orgID, []Cluster{c}, w)
	if err != nil {
		return ClusterUsage{}, err
	}
	return out[0], nil
}
