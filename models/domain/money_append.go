package domain

import "strconv"

// AppendUSD appends USD(m) to dst without allocating on its own: pages that
// print hundreds of prices format them into one buffer (Q6).
func AppendUSD(dst []byte, m Money) []byte {
	if m < 0 {
		dst = append(dst, '-')
		m = -m
	}
	cents := (m + 5_000) / 10_000
	dst = append(dst, '$')
	var digits [24]byte
	whole := strconv.AppendInt(digits[:0], int64(cents/100), 10)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, d)
	}
	c := cents % 100
	return append(dst, '.', byte('0'+c/10), byte('0'+c%10))
}

// AppendDecimalUSD appends DecimalUSD(m) to dst (the API's money form).
func AppendDecimalUSD(dst []byte, m Money) []byte {
	if m < 0 {
		dst = append(dst, '-')
		m = -m
	}
	dst = strconv.AppendInt(dst, int64(m/Micro), 10)
	dst = append(dst, '.')
	frac := m % Micro
	var six [6]byte
	for i := 5; i >= 0; i-- {
		six[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 6
	for n > 2 && six[n-1] == '0' {
		n--
	}
	return append(dst, six[:n]...)
}

// AppendPrice appends a rate exactly as PriceUSD formats it.
func AppendPrice(dst []byte, m Money) []byte {
	if m < 0 {
		dst = append(dst, '-')
		m = -m
	}
	dst = append(dst, '$')
	var digits [24]byte
	whole := strconv.AppendInt(digits[:0], int64(m/Micro), 10)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, d)
	}
	dst = append(dst, '.')
	frac := m % Micro
	var six [6]byte
	for i := 5; i >= 0; i-- {
		six[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 6
	for n > 2 && six[n-1] == '0' {
		n--
	}
	return append(dst, six[:n]...)
}

// PriceUSD is a price per hour as people read it, exact: dollars with
// thousands separators and at least two decimals, more only when the rate
// has them ("$39.84", "$79.7516", "$1,275.52"). It is never rounded, so a
// cluster's price shown is always the machine's price shown × machines, and
// the page reads the same figures as the API (DecimalUSD) and the events
// (O7, Q6). Balances and charges, which are whole cents, use USD.
func PriceUSD(m Money) string { return string(AppendPrice(nil, m)) }
