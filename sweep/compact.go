package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// concatParquet writes the rows of inputs, in order, to dir/name with the
// first input's schema and key-value metadata (ratesweep.shard set to 0/1),
// through a temporary file like every other part.
func concatParquet(ctx context.Context, dir, name string, inputs []string) (fileMeta, error) {
	if len(inputs) == 0 {
		return fileMeta{}, errors.New("no input files")
	}
	schema, err := fileSchema(inputs[0])
	if err != nil {
		return fileMeta{}, err
	}
	keys, vals := schema.Metadata().Keys(), schema.Metadata().Values()
	var k2, v2 []string
	for i, k := range keys {
		switch k {
		case "ARROW:schema": // rewritten by the writer
		case MetaShard:
			k2, v2 = append(k2, k), append(v2, Shard{0, 1}.String())
		default:
			k2, v2 = append(k2, k), append(v2, vals[i])
		}
	}
	md := arrow.NewMetadata(k2, v2)
	schema = arrow.NewSchema(schema.Fields(), &md)
	return writeParquetStream(dir, name, schema, func(fw *pqarrow.FileWriter) (int64, error) {
		var rows int64
		for _, in := range inputs {
			n, err := copyRecords(ctx, in, schema, fw)
			if err != nil {
				return 0, err
			}
			rows += n
		}
		return rows, nil
	})
}

// fileSchema is a Parquet file's Arrow schema with its key-value metadata.
func fileSchema(path string) (*arrow.Schema, error) {
	rdr, err := openParquet(path)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	return fr.Schema()
}

// copyRecords appends every row of path to fw; the file's columns must
// match schema.
func copyRecords(ctx context.Context, path string, schema *arrow.Schema, fw *pqarrow.FileWriter) (_ int64, err error) {
	defer recoverDamaged(path, &err)
	rdr, err := openParquet(path)
	if err != nil {
		return 0, err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	sc, err := fr.Schema()
	if err != nil {
		return 0, err
	}
	if !sc.Equal(schema) {
		return 0, fmt.Errorf("%s: columns differ from the first file's", path)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		rec := rr.RecordBatch()
		out := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
		err := fw.WriteBuffered(out)
		out.Release()
		if err != nil {
			return 0, err
		}
		rows += rec.NumRows()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return 0, damaged(path, err)
	}
	return rows, nil
}
