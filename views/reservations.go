package views

// ReservationRow is one reservation as the list and the detail show it
// (X18): plain strings, built by the handler.
type ReservationRow struct {
	ID, Status, Shape, Offer, Start, End, Term, Price, Total, Deposit string
	FullRefundUntil, HalfRefundUntil, LaunchAt, Source, SourceText    string
	ChangeUntil                                                       string
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

// ReserveForm is the booking form as typed (X18): the start is a date and
// a whole UTC hour, the term in hours.
type ReserveForm struct {
	Offer, From, Nodes, Date, Hour, Hours string
}

// CalendarDayView is one day of an offer's availability calendar.
type CalendarDayView struct {
	Date, Label string // 2027-01-04, "Jan 4"
	Free        int
	Bookable    bool   // the form's size fits on every hour of the day
	URL         string // the form with this day as its start ("" when not bookable)
}

// ReservePage is GET /reservations/new: an offer's calendar at one size
// (up to 120 days), the booking form, and once asked the preview with the
// locked price, the deposit and the windows, stated before booking (X18).
type ReservePage struct {
	Meta               Meta
	Form               ReserveForm
	Shape, Location    string // the offer's, at the form's size
	MachineHour        string // "$2.49 per machine-hour"
	Source, SourceText string
	Lead               string // "launched 1 h 9 min ahead"
	Days               []CalendarDayView
	Problems           map[string]string
	Preview            *ReservationRow // nil until a valid preview is asked
	BookLine           string          // the confirm's detail: the deposit taken now
	FromName           string          // the cluster whose shape is reserved again
}
