// Package units owns synergy's human sizes: parsing the sizes flags and
// job arguments carry ("512MiB", "1.5GB", "64k") and formatting byte counts
// and memory limits for tables, labels and messages ("1.5GiB",
// "unlimited"). It imports the standard library only, so every package,
// the stdlib-only sensitivity and models/synthtrain included, may use it.
package units
