package models

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// The picker reads the catalog on every request and the catalog job changes
// it about once a minute (O3). So PickOffers serves the public catalog
// from a snapshot in memory, keyed by a version stored in the database: every
// write to the offers table bumps catalog_versions in the same transaction,
// and each request reads that one row (one indexed lookup) to know whether
// its snapshot is current. Instances sharing the database therefore agree on
// the version; a snapshot never outlives the rows it copied. What changes
// between catalog writes — machines held by clusters (stock.go) and the
// freshness window (O6) — is applied per request, never snapshotted.
//
// The snapshot holds customer prices (markup, OP2, pricing.go): a markup
// change bumps the version in the same transaction (SetProviderMarkup), and
// the store's DefaultMarkup, set from configuration, is part of the
// snapshot's key and of Pick's stamp.

// CatalogVersion is the one row counting writes to the offers table.
type CatalogVersion struct {
	ID      int `gorm:"primaryKey"`
	Version int64
}

// catalogVersionRow is the only row's id.
const catalogVersionRow = 1

// Frozen copy of the table as migration 0003 created it.
type catalogVersionV0003 struct {
	ID      int `gorm:"primaryKey"`
	Version int64
}

func (catalogVersionV0003) TableName() string { return "catalog_versions" }

func up0003CatalogVersion(tx *gorm.DB) error {
	if err := tx.Migrator().CreateTable(&catalogVersionV0003{}); err != nil {
		return err
	}
	return tx.Create(&catalogVersionV0003{ID: catalogVersionRow, Version: 1}).Error
}

// bumpCatalogVersion marks the catalog changed; call it inside the
// transaction that changes offers, so the new version and the new rows
// commit together.
func (s *Store) bumpCatalogVersion(ctx context.Context) error {
	err := s.db.WithContext(ctx).Exec("UPDATE catalog_versions SET version = version + 1 WHERE id = ?", catalogVersionRow).Error
	if err != nil {
		return fmt.Errorf("models: bump catalog version: %w", err)
	}
	return nil
}

// pickStateQuery reads, in one statement and so from one database snapshot,
// the catalog version (the row with an empty offer id) and what clusters
// hold against each counted offer (stock.go).
const pickStateQuery = "SELECT '' AS offer_id, version AS n FROM catalog_versions WHERE id = 1 UNION ALL " +
	"SELECT clusters.offer_id, COALESCE(SUM(clusters.nodes), 0) FROM clusters JOIN offers ON offers.id = clusters.offer_id " +
	"WHERE offers.nodes_available IS NOT NULL AND " + heldClause + " GROUP BY clusters.offer_id"

// pickState is the picker's one statement per request: the catalog version
// and the holds. The root store runs it as a prepared statement, and shares
// one run among the requests that wait for it (pickStates); the map is
// shared too, and never modified.
func (s *Store) pickState(ctx context.Context) (int64, map[string]int, error) {
	if s.catalogCache == nil {
		return s.readPickState(ctx, s.db)
	}
	return s.catalogCache.states.read(ctx, func(ctx context.Context) (int64, map[string]int, error) {
		return s.readPickState(ctx, s.catalogCache.prepared)
	})
}

// pickStates runs the picker's statement once for every request that asked
// for it while the previous run was under way, and never for a request with
// an answer read before it arrived: a batch closes when its run starts, so
// each answer is at least as new as every request it serves. Under load the
// picker's requests no longer queue one statement each for the database
// (SQLite has one connection): O3.
type pickStates struct {
	mu      sync.Mutex
	waiting *pickStateRun // the batch that has not started yet
	running chan struct{} // holds one token while a run is under way
	asks    int           // requests seen
}

type pickStateRun struct {
	done    chan struct{}
	version int64
	held    map[string]int
	err     error
}

func (g *pickStates) read(ctx context.Context, query func(context.Context) (int64, map[string]int, error)) (int64, map[string]int, error) {
	g.mu.Lock()
	if g.running == nil {
		g.running = make(chan struct{}, 1)
	}
	g.asks++
	run, first := g.waiting, g.waiting == nil
	if first {
		run = &pickStateRun{done: make(chan struct{})}
		g.waiting = run
	}
	g.mu.Unlock()
	if first {
		go func() { // apart from ctx: the batch's other requests wait for it
			g.running <- struct{}{}
			g.mu.Lock()
			g.waiting = nil // who comes now waits for the next run
			g.mu.Unlock()
			run.version, run.held, run.err = query(context.WithoutCancel(ctx))
			<-g.running
			close(run.done)
		}()
	}
	select {
	case <-run.done:
		return run.version, run.held, run.err
	case <-ctx.Done():
		return 0, nil, fmt.Errorf("models: catalog version and holds: %w", ctx.Err())
	}
}

// readPickState runs pickStateQuery on db.
func (s *Store) readPickState(ctx context.Context, db *gorm.DB) (int64, map[string]int, error) {
	rows, err := db.WithContext(ctx).Raw(pickStateQuery).Rows()
	if err != nil {
		return 0, nil, fmt.Errorf("models: catalog version and holds: %w", err)
	}
	defer rows.Close()
	var (
		version int64 = -1
		held          = map[string]int{}
	)
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return 0, nil, fmt.Errorf("models: catalog version and holds: %w", err)
		}
		if id == "" {
			version = n
		} else {
			held[id] = int(n)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("models: catalog version and holds: %w", err)
	}
	if version < 0 {
		return 0, nil, fmt.Errorf("models: catalog version: no row (migration 0003_catalog_version)")
	}
	return version, held, nil
}

// CatalogVersion reads the catalog's version: it changes whenever an offer
// row does, on whichever instance wrote it.
func (s *Store) CatalogVersion(ctx context.Context) (int64, error) {
	var v int64
	row := s.db.WithContext(ctx).Raw("SELECT version FROM catalog_versions WHERE id = ?", catalogVersionRow).Row()
	if err := row.Scan(&v); err != nil {
		return 0, fmt.Errorf("models: catalog version: %w", err)
	}
	return v, nil
}

// catalogSnapshot is every offer row at one catalog version, ordered by id.
// It is shared by concurrent requests and never modified.
type catalogSnapshot struct {
	version   int64
	markup    MarkupBP // the store's DefaultMarkup the prices were computed with
	offers    []Offer
	refreshed []time.Time // every offer's RefreshedAt, sorted (Pick's stamp)
}

// catalogCache holds the newest snapshot this process has loaded.
type catalogCache struct {
	snap     atomic.Pointer[catalogSnapshot]
	mu       sync.Mutex // serialises loads, so a version change loads once
	prepared *gorm.DB   // the store's handle with prepared statements, for pickState
	states   pickStates // pickState's shared runs
}

func newCatalogCache(db *gorm.DB) *catalogCache {
	return &catalogCache{prepared: db.Session(&gorm.Session{PrepareStmt: true})}
}

// catalog returns the snapshot at version v (read by pickState), loading it
// when the version moved. The version is read before the rows: under
// concurrent writes the rows are then at least as new as the version they
// are filed under, and the next request sees the newer version and loads
// again. Inside a transaction (no cache) it loads the rows every time.
// A snapshot priced at another DefaultMarkup is not current either.
func (s *Store) catalog(ctx context.Context, v int64) (*catalogSnapshot, error) {
	if s.catalogCache == nil {
		return s.loadCatalog(ctx, v)
	}
	c := s.catalogCache
	if snap := c.snap.Load(); snap != nil && snap.version == v && snap.markup == s.settings.DefaultMarkup {
		return snap, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if snap := c.snap.Load(); snap != nil && snap.version == v && snap.markup == s.settings.DefaultMarkup {
		return snap, nil
	}
	snap, err := s.loadCatalog(ctx, v)
	if err != nil {
		return nil, err
	}
	c.snap.Store(snap)
	return snap, nil
}

func (s *Store) loadCatalog(ctx context.Context, v int64) (*catalogSnapshot, error) {
	var offers []Offer
	if err := s.db.WithContext(ctx).Order("id").Find(&offers).Error; err != nil {
		return nil, fmt.Errorf("models: load catalog: %w", err)
	}
	offers, err := s.customerPrices(ctx, offers) // OP2: markup, before any sort key is built
	if err != nil {
		return nil, err
	}
	refreshed := make([]time.Time, len(offers))
	for i := range offers {
		refreshed[i] = offers[i].RefreshedAt
	}
	slices.SortFunc(refreshed, time.Time.Compare)
	return &catalogSnapshot{version: v, markup: s.settings.DefaultMarkup, offers: offers, refreshed: refreshed}, nil
}
