package sweep

// Version is ratesweep's version, written into every Parquet file.
const Version = "0.1.0"
