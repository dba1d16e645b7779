package views

// ReservationRow is one reservation as the list and the detail show it
// (X18): plain strings, built by the handler.
type ReservationRow struct {
	ID, Status, Shape, Offer, Start, End, Term, Price, Total, Deposit string
	FullRefundUntil, HalfRefundUntil, LaunchAt, Source, SourceText    string
	Cluster, HandedOver, LateCredit, Refund                           string
}

// ReservationEventRow is one step of a reservation's trail.
type ReservationEventRow struct {
	At, Type, Message string
}

// ReservationsPage is GET /reservations.
type ReservationsPage struct {
	Meta Meta
	Rows []ReservationRow
}

// ReservationPage is GET /reservations/{id}.
type ReservationPage struct {
	Meta  Meta
	R     ReservationRow
	Trail []ReservationEventRow
}
