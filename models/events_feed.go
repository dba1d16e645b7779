package models

import (
	"context"
	"slices"
	"time"
)

// The event feed (GET /v1/events, its stream and the MCP tools): an
// environment's cluster events after a cursor, the event's id.

// EventSettle is how long a hole in the event ids holds the feed back. Ids
// are handed out when a row is inserted, not when its transaction commits:
// on PostgreSQL event 11 may be visible before event 10, and a reader that
// moved its cursor to 11 would never see 10. So the feed stops before the
// first hole whose next event is younger than this; an older hole is a
// rolled-back transaction and is passed.
const EventSettle = 10 * time.Second

// MaxEventsPage is the most events one page holds.
const MaxEventsPage = 500

// EventsQuery selects a page of the feed.
type EventsQuery struct {
	OrgID     string
	EnvID     string // "" = every environment of the organisation
	ClusterID string // "" = every cluster
	After     int64  // the cursor: events with a larger id
	Limit     int    // 1 to MaxEventsPage; 0 = 100
}

// EventsPage is one page of the feed. Next is the cursor to ask with next:
// the last event's id, or, when the page is not full, the settled end of
// the feed (events of other environments are skipped for good). More says
// the page was full.
type EventsPage struct {
	Events []ClusterEvent
	Next   int64
	More   bool
}

// EventsAfter is one page of the feed, oldest first.
func (s *Store) EventsAfter(ctx context.Context, q EventsQuery) (EventsPage, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	q.Limit = min(q.Limit, MaxEventsPage)
	horizon, err := s.eventHorizon(ctx, q.After)
	if err != nil {
		return EventsPage{}, err
	}
	page := EventsPage{Events: []ClusterEvent{}, Next: max(q.After, horizon)}
	if horizon <= q.After {
		page.Next = q.After
		return page, nil
	}
	db := s.db.WithContext(ctx).Model(&ClusterEvent{}).
		Where("cluster_events.org_id = ? AND cluster_events.id > ? AND cluster_events.id <= ?", q.OrgID, q.After, horizon)
	if q.EnvID != "" {
		db = db.Joins("JOIN clusters ON clusters.id = cluster_events.cluster_id").Where("clusters.env_id = ?", q.EnvID)
	}
	if q.ClusterID != "" {
		db = db.Where("cluster_events.cluster_id = ?", q.ClusterID)
	}
	if err := db.Select("cluster_events.*").Order("cluster_events.id").Limit(q.Limit).Find(&page.Events).Error; err != nil {
		return EventsPage{}, err
	}
	if len(page.Events) == q.Limit {
		page.More, page.Next = true, page.Events[len(page.Events)-1].ID
	}
	return page, nil
}

// eventHorizon is the largest id up to which every event after after is
// settled: committed, or its transaction gone (EventSettle). It looks at
// the newest ids only: a hole older than them is long settled.
func (s *Store) eventHorizon(ctx context.Context, after int64) (int64, error) {
	var rows []struct {
		ID int64
		At time.Time
	}
	const tail = 1000
	if err := s.db.WithContext(ctx).Model(&ClusterEvent{}).Select("id, at").Where("id > ?", after).
		Order("id DESC").Limit(tail).Find(&rows).Error; err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return after, nil
	}
	slices.Reverse(rows)
	prev := after
	if len(rows) == tail {
		prev = rows[0].ID - 1 // the ids below the tail are older than any open transaction's
	}
	young := s.Now().Add(-EventSettle)
	for _, r := range rows {
		if r.ID != prev+1 && r.At.After(young) {
			return prev, nil // a hole that may still fill
		}
		prev = r.ID
	}
	return prev, nil
}
