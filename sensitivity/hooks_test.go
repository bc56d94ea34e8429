package sensitivity

// Helpers of the package's tests lent to its external tests
// (readers_test.go).
var (
	GridProfile   = gridProfile
	SmallServer   = smallServer
	EncodeJSON    = encodeJSON
	SlurmMem      = slurmMem
	ParseGavelKey = parseGavelKey
)

// MiB is a mebibyte, as the package's tests count.
const MiB = mib
