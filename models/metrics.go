package models

import (
	"context"
	"time"
)

// Gauges is what /metrics reports from the database, so every instance
// reports the same shared state (OP3, OP4).
type Gauges struct {
	ClustersByStatus map[ClusterStatus]int64
	MailPending      int64 // queued, not yet sent nor given up
	MailFailed       int64 // given up after every attempt
	Catalog          []CatalogHealth
	Jobs             []JobRun
	Ledger           []LedgerTotal
	GPUs             []ClusterGPUUsage // clusters whose GPUs reported in the last minutes (X15)
}

// LedgerTotal sums every organisation's ledger entries of one kind and
// status. The sum is kept as whole dollars and remainders (limits.go), so no
// organisation's ledger can make it fail (B9).
type LedgerTotal struct {
	Kind    string
	Status  string
	Entries int64
	Whole   int64 // dollars
	Frac    int64 // micro-dollars
}

// USD is the total in dollars.
func (l LedgerTotal) USD() float64 { return moneySum{Whole: l.Whole, Frac: l.Frac}.USD() }

// MetricsGauges reads every gauge in a handful of queries.
func (s *Store) MetricsGauges(ctx context.Context) (Gauges, error) {
	g := Gauges{ClustersByStatus: map[ClusterStatus]int64{}}
	var rows []struct {
		Status ClusterStatus
		N      int64
	}
	if err := s.db.WithContext(ctx).Model(&Cluster{}).Select("status, count(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return g, err
	}
	for _, r := range rows {
		g.ClustersByStatus[r.Status] = r.N
	}
	db := s.db.WithContext(ctx).Model(&OutboxMail{})
	if err := db.Where("sent_at IS NULL AND failed_at IS NULL").Count(&g.MailPending).Error; err != nil {
		return g, err
	}
	if err := s.db.WithContext(ctx).Model(&OutboxMail{}).Where("failed_at IS NOT NULL").Count(&g.MailFailed).Error; err != nil {
		return g, err
	}
	var err error
	if g.Catalog, err = s.CatalogHealthByProvider(ctx); err != nil {
		return g, err
	}
	if g.Jobs, err = s.JobRuns(ctx); err != nil {
		return g, err
	}
	err = s.db.WithContext(ctx).Model(&LedgerEntry{}).
		Select("kind, status, count(*) AS entries, " + moneySumColumns("amount")).
		Group("kind, status").Order("kind, status").Scan(&g.Ledger).Error
	if err != nil {
		return g, err
	}
	g.GPUs, err = s.GPUUsageByCluster(ctx)
	return g, err
}

// CatalogAge is how long ago a provider's catalog was refreshed.
func (c CatalogHealth) CatalogAge(now time.Time) time.Duration { return now.Sub(c.RefreshedAt) }
