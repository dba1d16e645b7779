package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/gorm"
)

// UsagePeriod is one accrual (B2): each machine's usage is written once per
// clock hour, as a ledger entry keyed "usage:<node id>:<period start>".
const UsagePeriod = time.Hour

// Batch sizes of a metering pass: clusters read per page, ledger rows per
// INSERT (SQLite binds every value; PostgreSQL takes arrays). Statements
// grow with these batches, never with machines.
var (
	meterPageSize    = 1000
	meterChunkRows   = 1000
	meterChunkArrays = 10_000
)

// migrateUsage adds what metering needs in plain SQL (the frozen history of
// 0400): the machine and period on ledger entries, how far each cluster's
// usage is written, and per-machine state intervals (X7).
func migrateUsage(tx *gorm.DB) error {
	ts := "datetime"
	serial := "INTEGER PRIMARY KEY AUTOINCREMENT"
	if tx.Dialector.Name() == "postgres" {
		ts, serial = "timestamptz", "BIGSERIAL PRIMARY KEY"
	}
	for _, q := range []string{
		"ALTER TABLE ledger_entries ADD COLUMN node_id varchar(32) NOT NULL DEFAULT ''",
		"ALTER TABLE ledger_entries ADD COLUMN period_start " + ts,
		"ALTER TABLE ledger_entries ADD COLUMN period_end " + ts,
		"ALTER TABLE ledger_entries ADD COLUMN minutes bigint NOT NULL DEFAULT 0",
		"CREATE TABLE usage_marks (cluster_id varchar(32) PRIMARY KEY, billed_until " + ts + " NOT NULL)",
		"CREATE TABLE machine_intervals (id " + serial + ", cluster_id varchar(32) NOT NULL, org_id varchar(32) NOT NULL, " +
			"node_id varchar(32) NOT NULL, state varchar(16) NOT NULL, started_at " + ts + " NOT NULL, ended_at " + ts + ")",
		"CREATE INDEX idx_machine_intervals_cluster ON machine_intervals (cluster_id)",
		"CREATE UNIQUE INDEX idx_machine_intervals_open ON machine_intervals (node_id) WHERE ended_at IS NULL",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// UsageMark is how far a cluster's usage is written to the ledger (B1):
// every whole minute before BilledUntil is charged.
type UsageMark struct {
	ClusterID   string `gorm:"primaryKey"`
	BilledUntil time.Time
}

// machineCharge is the cumulative charge of one machine after m whole
// minutes at rate per hour, rounded down. Every period is the difference of
// two of these, so the periods of a machine sum exactly to its total (B2).
func machineCharge(rate Money, m int64) Money { return rate * Money(m) / 60 }

// minutesSince counts the whole minutes from start to t (never negative).
func minutesSince(start, t time.Time) int64 { return max(int64(t.Sub(start)/time.Minute), 0) }

// billedCluster is what a metering pass reads of one cluster.
type billedCluster struct {
	ID          string
	OrgID       string
	Name        string
	MachineHour Money
	ReadyAt     time.Time
	ReleasedAt  *time.Time
	BilledUntil *time.Time
	StoppedAt   *time.Time // a stop ended the current run's billing here (B6)
	BillFrom    *time.Time // the current run started here after a resume or a hand-over
	UnbilledAt  *time.Time // verification holds billing from here (X13)
}

// meterColumns is what a metering pass reads of a cluster and its mark.
const meterColumns = "c.id, c.org_id, c.name, c.machine_hour, c.ready_at, c.released_at, c.stopped_at, c.bill_from, c.unbilled_at, m.billed_until"

// usageRow is one machine-period about to be written.
type usageRow struct {
	orgID, clusterID, nodeID, desc string
	amount                         Money
	minutes                        int64
	start, end                     time.Time
}

// MeterResult says what one metering pass did.
type MeterResult struct {
	Clusters int   // clusters with a closed period
	Volumes  int   // volumes with a closed period (V3)
	Entries  int64 // ledger entries written (0 on a rerun)
}

// MeterUsage is one billing pass (B1, B2): for every cluster that ever had
// every machine up (readyAt), it writes each machine's closed periods since
// the last pass at the quote's locked per-machine rate, prorated by the
// minute from readyAt (or, after a resume, from the moment every machine
// joined again). A period closes at the end of its hour or, for a
// terminated or stopped cluster, at the minute its machines were released
// or stopped (B6). Entries are
// unique by key, so a rerun, a crash half-way or two passes at once charge
// once. The open period is not written (it is Accumulating).
func (s *Store) MeterUsage(ctx context.Context) (MeterResult, error) {
	res, err := s.meterClusters(ctx)
	if err != nil {
		return res, err
	}
	// Volumes bill by the GB-hour from creation until deleted, attached or
	// not (B2, V3), into the same ledger under "usage:vol:<id>:<period>".
	n, entries, err := s.meterVolumes(ctx, s.Now())
	res.Volumes, res.Entries = n, res.Entries+entries
	return res, err
}

func (s *Store) meterClusters(ctx context.Context) (MeterResult, error) {
	var res MeterResult
	now := s.Now()
	after := ""
	for {
		page, err := s.clustersToMeter(ctx, now, after)
		if err != nil || len(page) == 0 {
			return res, err
		}
		after = page[len(page)-1].ID
		n, err := s.meterPage(ctx, page, now)
		res.Clusters += len(page)
		res.Entries += n
		if err != nil {
			return res, err
		}
		if len(page) < meterPageSize {
			return res, nil
		}
	}
}

// clustersToMeter reads the next page of clusters with a closed, unwritten
// period, by id.
func (s *Store) clustersToMeter(ctx context.Context, now time.Time, after string) ([]billedCluster, error) {
	var out []billedCluster
	err := s.db.WithContext(ctx).Table("clusters AS c").
		Select(meterColumns).
		Joins("LEFT JOIN usage_marks m ON m.cluster_id = c.id").
		Where("c.ready_at IS NOT NULL AND c.id > ?", after).
		// A run ends at the verification hold (X13), the stop or the
		// release, whichever is set first (each is set only before the
		// next); a run that ended where it began has nothing to write.
		Where("(COALESCE(c.unbilled_at, c.stopped_at, c.released_at) IS NULL AND COALESCE(m.billed_until, c.ready_at) < ? AND "+
			"COALESCE(c.bill_from, c.ready_at) < ?) OR "+
			"(COALESCE(c.unbilled_at, c.stopped_at, c.released_at) > COALESCE(c.bill_from, c.ready_at) AND "+
			"(m.billed_until IS NULL OR m.billed_until < COALESCE(c.unbilled_at, c.stopped_at, c.released_at)))",
			now.Truncate(UsagePeriod), now.Truncate(UsagePeriod)).
		Order("c.id").Limit(meterPageSize).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: clusters to meter: %w", err)
	}
	return out, nil
}

// meterPage writes one page's closed periods and advances its marks in one
// transaction.
func (s *Store) meterPage(ctx context.Context, page []billedCluster, now time.Time) (int64, error) {
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.ID
	}
	nodes, err := s.machinesOf(ctx, ids)
	if err != nil {
		return 0, err
	}
	var rows []usageRow
	marks := make(map[string]time.Time, len(page))
	for _, c := range page {
		until, crows := closedUsage(c, nodes[c.ID], now)
		rows = append(rows, crows...)
		if !until.IsZero() {
			marks[c.ID] = until
		}
	}
	chunk := meterChunkRows
	if s.IsPostgres() {
		chunk = meterChunkArrays
	}
	var written int64
	err = s.Tx(ctx, func(tx *Store) error {
		for i := 0; i < len(rows); i += chunk {
			n, err := tx.insertUsage(ctx, rows[i:min(i+chunk, len(rows))])
			if err != nil {
				return err
			}
			written += n
		}
		return tx.advanceMarks(ctx, page, marks)
	})
	if err != nil {
		return 0, fmt.Errorf("models: meter usage: %w", err)
	}
	return written, nil
}

// machineRef is what billing needs of a machine: its unbilled gaps too.
type machineRef struct {
	ID, ClusterID, Name string
	Gaps                []BillingGap
}

// machinesOf reads the machines of a page of clusters and their unbilled
// gaps (see join.go) in one query.
func (s *Store) machinesOf(ctx context.Context, clusterIDs []string) (map[string][]machineRef, error) {
	var rows []struct {
		ID, ClusterID, Name string
		GapStart, GapEnd    *time.Time
	}
	err := s.db.WithContext(ctx).Table("cluster_nodes AS n").
		Select("n.id, n.cluster_id, n.name, g.started_at AS gap_start, g.ended_at AS gap_end").
		Joins("LEFT JOIN node_billing_gaps g ON g.node_id = n.id").
		Where("n.cluster_id IN ?", clusterIDs).Order("n.cluster_id, n.rank, g.started_at").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("models: meter machines: %w", err)
	}
	out := make(map[string][]machineRef, len(clusterIDs))
	for _, r := range rows {
		ms := out[r.ClusterID]
		if len(ms) == 0 || ms[len(ms)-1].ID != r.ID {
			ms = append(ms, machineRef{ID: r.ID, ClusterID: r.ClusterID, Name: r.Name})
		}
		if r.GapStart != nil {
			m := &ms[len(ms)-1]
			m.Gaps = append(m.Gaps, BillingGap{NodeID: r.ID, ClusterID: r.ClusterID, StartedAt: *r.GapStart, EndedAt: r.GapEnd})
		}
		out[r.ClusterID] = ms
	}
	return out, nil
}

// billedMinutes is a machine's billable whole minutes from readyAt to t:
// the time less its unbilled gaps (a worker before it joined, a replaced
// machine's slot until its replacement joined). It never decreases, so
// charges taken as differences of it sum exactly (B2).
func billedMinutes(readyAt time.Time, gaps []BillingGap, t time.Time) int64 {
	d := t.Sub(readyAt)
	for _, g := range gaps {
		from, to := maxTime(g.StartedAt, readyAt), t
		if g.EndedAt != nil && g.EndedAt.Before(to) {
			to = *g.EndedAt
		}
		if to.After(from) {
			d -= to.Sub(from)
		}
	}
	return max(int64(d/time.Minute), 0)
}

// closedUsage computes a cluster's closed, unwritten periods for every
// machine and the mark after them (zero when none closed). Billing runs
// from the current run's start (readyAt, or the last resume's) to its end
// (the stop or the release); minutes count from the run's start. Within a
// run a machine is billed its own minutes (billedMinutes: less its unbilled
// gaps); one with none in a period gets no entry for it. A resumed run's
// pieces are keyed by their own start, so they never meet the keys of an
// earlier run in the same hour.
func closedUsage(c billedCluster, nodes []machineRef, now time.Time) (time.Time, []usageRow) {
	anchor, stop := c.billAnchor(), c.billEnd()
	from := anchor
	if c.BilledUntil != nil && c.BilledUntil.After(from) {
		from = *c.BilledUntil
	}
	var until time.Time
	var rows []usageRow
	for p := from.Truncate(UsagePeriod); ; p = p.Add(UsagePeriod) {
		end := p.Add(UsagePeriod)
		if stop != nil && !end.Before(*stop) {
			end = *stop
		} else if end.After(now) {
			break // the open period: Accumulating, not written
		}
		if !end.After(from) {
			break
		}
		start := maxTime(p, from)
		until = end
		key := p
		if !anchor.Equal(c.ReadyAt) {
			key = maxTime(p, anchor)
		}
		for _, n := range nodes {
			m0, m1 := billedMinutes(anchor, n.Gaps, start), billedMinutes(anchor, n.Gaps, end)
			if m1 <= m0 {
				continue
			}
			rows = append(rows, usageRow{orgID: c.OrgID, clusterID: c.ID, nodeID: n.ID,
				amount:  machineCharge(c.MachineHour, m1) - machineCharge(c.MachineHour, m0),
				minutes: m1 - m0, start: key, end: end,
				desc: fmt.Sprintf("Cluster usage — %s, %s, %s–%s", c.Name, n.Name, start.Format("Jan 2 15:04"), end.Format("15:04"))})
		}
		if stop != nil && !end.Before(*stop) {
			break
		}
	}
	return until, rows
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// UsageKey is the idempotency key of one machine's usage in the period
// starting at start (B1).
func UsageKey(nodeID string, start time.Time) string {
	return "usage:" + nodeID + ":" + start.UTC().Format(time.RFC3339)
}

// usageColumns are the ledger columns a usage row fills.
const usageColumns = "id, org_id, kind, status, amount, idem_key, description, cluster_id, created_at, node_id, period_start, period_end, minutes"

// insertUsage writes rows as usage entries in one INSERT; rows already
// written are skipped by their key. PostgreSQL gets one array per column
// (unnest), which it parses far faster than thousands of placeholders.
func (s *Store) insertUsage(ctx context.Context, rows []usageRow) (int64, error) {
	if s.IsPostgres() {
		return s.insertUsageArrays(ctx, rows)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO ledger_entries (" + usageColumns + ") VALUES ")
	args := make([]any, 0, len(rows)*13)
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?)")
		args = append(args, NewID("le"), r.orgID, LedgerUsage, EntryCompleted, -r.amount, UsageKey(r.nodeID, r.start),
			truncate(r.desc, 255), r.clusterID, r.end, r.nodeID, r.start, r.end, r.minutes)
	}
	b.WriteString(" ON CONFLICT (idem_key) DO NOTHING")
	res := s.db.WithContext(ctx).Exec(b.String(), args...)
	return res.RowsAffected, res.Error
}

func (s *Store) insertUsageArrays(ctx context.Context, rows []usageRow) (int64, error) {
	n := len(rows)
	ids, orgs, kinds, statuses, keys, descs, clusters, nodes := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amounts, minutes := make([]int64, n), make([]int64, n)
	starts, ends := make([]time.Time, n), make([]time.Time, n)
	prefix := NewID("le") // one random prefix, then a sequence: the rows land side by side in the primary key
	for i, r := range rows {
		ids[i], orgs[i], kinds[i], statuses[i] = prefix+"_"+fmt.Sprintf("%05d", i), r.orgID, LedgerUsage, EntryCompleted
		keys[i], descs[i], clusters[i], nodes[i] = UsageKey(r.nodeID, r.start), truncate(r.desc, 255), r.clusterID, r.nodeID
		amounts[i], minutes[i], starts[i], ends[i] = int64(-r.amount), r.minutes, r.start, r.end
	}
	res := s.db.WithContext(ctx).Exec("INSERT INTO ledger_entries ("+usageColumns+") SELECT * FROM unnest("+
		"?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::timestamptz[], "+
		"?::text[], ?::timestamptz[], ?::timestamptz[], ?::bigint[]) ON CONFLICT (idem_key) DO NOTHING",
		pgArray[string]{ids}, pgArray[string]{orgs}, pgArray[string]{kinds}, pgArray[string]{statuses}, pgArray[int64]{amounts},
		pgArray[string]{keys}, pgArray[string]{descs}, pgArray[string]{clusters}, pgArray[time.Time]{ends},
		pgArray[string]{nodes}, pgArray[time.Time]{starts}, pgArray[time.Time]{ends}, pgArray[int64]{minutes})
	return res.RowsAffected, res.Error
}

// pgArray passes a slice to PostgreSQL as one array parameter: the driver
// encodes it natively, and GORM, seeing a struct, does not expand it into
// a list.
type pgArray[T any] struct{ v []T }

// Dimensions implements pgtype.ArrayGetter.
func (a pgArray[T]) Dimensions() []pgtype.ArrayDimension {
	return []pgtype.ArrayDimension{{Length: int32(len(a.v)), LowerBound: 1}}
}

// Index implements pgtype.ArrayGetter.
func (a pgArray[T]) Index(i int) any { return a.v[i] }

// IndexType implements pgtype.ArrayGetter.
func (a pgArray[T]) IndexType() any { var zero T; return zero }

// advanceMarks records how far each cluster's usage is written; a mark
// only moves forward, so a slower concurrent pass cannot move it back.
func (s *Store) advanceMarks(ctx context.Context, page []billedCluster, marks map[string]time.Time) error {
	if len(marks) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("INSERT INTO usage_marks (cluster_id, billed_until) VALUES ")
	args := make([]any, 0, 2*len(marks))
	for _, c := range page {
		until, ok := marks[c.ID]
		if !ok {
			continue
		}
		if len(args) > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?)")
		args = append(args, c.ID, until)
	}
	b.WriteString(" ON CONFLICT (cluster_id) DO UPDATE SET billed_until = excluded.billed_until" +
		" WHERE usage_marks.billed_until < excluded.billed_until")
	return s.db.WithContext(ctx).Exec(b.String(), args...).Error
}
