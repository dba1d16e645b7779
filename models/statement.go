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
	// Shown is the amount as the page shows it, in whole cents (see
	// ShowInCents); zero until set.
	Shown Money
}

// InBalance is true for the rows the balance is made of (B8): completed
// entries and the usage accumulating; a pending top-up or a failed entry
// is listed but does not count.
func (t Transaction) InBalance() bool {
	return t.Status == EntryCompleted || t.Status == EntryAccumulating
}

// Transactions lists the organisation's transactions in w, newest first,
// with usage summarised per cluster and per volume (B1, B3): one query each
// for entries, usage sums and pending top-ups; usage lines give the open
// periods.
func (s *Store) Transactions(ctx context.Context, orgID string, w UsageWindow, lines []ClusterUsage, vols []VolumeUsage) ([]Transaction, error) {
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
	// A volume's usage has no cluster: it is summed per volume (its node_id).
	const volumeRef = "CASE WHEN cluster_id = '' OR cluster_id IS NULL THEN node_id ELSE '' END"
	var sums []struct {
		ClusterID string
		VolumeRef string
		Amount    Money
		Last      aggTime
	}
	err = db.Table("ledger_entries").Select("cluster_id, "+volumeRef+" AS volume_ref, SUM(amount) AS amount, MAX(period_end) AS last").
		Where("org_id = ? AND kind = ? AND period_start >= ? AND period_start < ?", orgID, LedgerUsage, w.From, w.To).
		Group("cluster_id, " + volumeRef).Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("models: usage of %s: %w", orgID, err)
	}
	names := map[string]string{}
	for _, l := range lines {
		names[l.Cluster.ID] = l.Cluster.Name
	}
	for _, v := range vols {
		names[v.Volume.UsageRef()] = v.Volume.Name
	}
	for _, u := range sums {
		desc := "Cluster usage — " + nameOr(names, u.ClusterID)
		if u.VolumeRef != "" {
			desc = "Volume — " + nameOr(names, u.VolumeRef)
		}
		out = append(out, Transaction{At: u.Last.Time, Kind: LedgerUsage, Status: EntryCompleted,
			Description: desc, ClusterID: u.ClusterID, Amount: u.Amount})
	}
	now := s.Now()
	for _, l := range lines {
		if l.Accumulating > 0 {
			out = append(out, Transaction{At: now, Kind: LedgerUsage, Status: EntryAccumulating,
				Description: "Cluster usage — " + l.Cluster.Name + " (this hour so far)", ClusterID: l.Cluster.ID, Amount: -l.Accumulating})
		}
	}
	for _, v := range vols {
		if v.Accumulating > 0 {
			out = append(out, Transaction{At: now, Kind: LedgerUsage, Status: EntryAccumulating,
				Description: "Volume — " + v.Volume.Name + " (this hour so far)", Amount: -v.Accumulating})
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

// BalanceBefore is the balance carried into a window starting at t, as the
// window's transactions count (B8): completed entries written before t,
// usage by the period it bills (a period starting before t).
func (s *Store) BalanceBefore(ctx context.Context, orgID string, t time.Time) (Money, error) {
	var sum Money
	err := s.db.WithContext(ctx).Model(&LedgerEntry{}).
		Where("org_id = ? AND status = ? AND ((kind <> ? AND created_at < ?) OR (kind = ? AND period_start < ?))",
			orgID, EntryCompleted, LedgerUsage, t, LedgerUsage, t).
		Select("COALESCE(SUM(amount), 0)").Scan(&sum).Error
	if err != nil {
		return 0, fmt.Errorf("models: balance of %s before %s: %w", orgID, t.Format(time.RFC3339), err)
	}
	return sum, nil
}

// Cents rounds m to whole cents, halves away from zero (as USD shows it).
func Cents(m Money) Money {
	const cent = Micro / 100
	if m < 0 {
		return -Cents(-m)
	}
	return (m + cent/2) / cent * cent
}

// ShowInCents is the one rounding rule of the transactions (B8): amounts
// are summed exactly in micro-dollars and only what is shown is rounded
// to the cent. Walking rows (newest first) from the oldest, each row that
// counts in the balance shows the change of the rounded running balance
// (from carried, the balance before them), so the rows shown, with the
// carried balance shown, add up exactly to the balance shown. A row that
// does not count (a pending top-up) shows its own amount rounded. It sets
// each row's Shown and returns the carried and closing balances, rounded.
func ShowInCents(carried Money, rows []Transaction) (carriedShown, closingShown Money) {
	run := carried
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		if !r.InBalance() {
			r.Shown = Cents(r.Amount)
			continue
		}
		next := run + r.Amount
		r.Shown = Cents(next) - Cents(run)
		run = next
	}
	return Cents(carried), Cents(run)
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
