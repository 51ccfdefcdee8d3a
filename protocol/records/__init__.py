"""Record batches (magic 2) and legacy message sets (magic 0/1).

* :mod:`~protocol.records.batch`: the 61-byte batch header: inspect, validate (CRC-32C), rewrite
  offsets and leader epochs in place. The broker's Produce path reads nothing else.
* :mod:`~protocol.records.record`: :class:`Record`, decoding all records of a batch, and
  :class:`RecordBatchBuilder`.
* :mod:`~protocol.records.control`: control batches and transaction markers.
* :mod:`~protocol.records.compression`: gzip, snappy (raw and snappy-java framed), lz4 (with
  Kafka 0.8-0.9's header checksum), zstd; bounded decompression.
* :mod:`~protocol.records.legacy`: magic 0/1 message sets.
* :mod:`~protocol.records.memory`: buffers mixing both formats.
* :mod:`~protocol.records.convert`: legacy <-> magic 2 for Produce v0-2 and Fetch v0-3.

Bad bytes raise :class:`~protocol.errors.RemoteProtocolError` subclasses only: CorruptRecord,
InvalidRecord, UnsupportedCompression, DecompressionLimitExceeded.
"""
