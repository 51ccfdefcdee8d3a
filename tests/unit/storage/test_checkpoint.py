import uuid

import pytest

from storage import checkpoint as cp


def test_offsets_checkpoint_format(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    cp.write_offsets_checkpoint(path, {("b", 1): 7, ("a", 0): 42})
    assert path.read_text() == "0\n2\na 0 42\nb 1 7\n"
    assert cp.read_offsets_checkpoint(path) == {("a", 0): 42, ("b", 1): 7}
    assert cp.read_offsets_checkpoint(tmp_path / "missing") == {}


@pytest.mark.parametrize(
    "text", ["", "0\n", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na 0\n", "0\n1\na x 1\n", "x\n0\n"]
)
def test_corrupt_offsets_checkpoint(tmp_path, text):
    path = tmp_path / "c"
    path.write_text(text)
    with pytest.raises(cp.CorruptCheckpoint):
        cp.read_offsets_checkpoint(path)


def test_epoch_checkpoint(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cp.write_epoch_checkpoint(path, [(0, 0), (3, 150)])
    assert path.read_text() == "0\n2\n0 0\n3 150\n"
    assert cp.read_epoch_checkpoint(path) == [(0, 0), (3, 150)]


def test_partition_metadata(tmp_path):
    path = tmp_path / "partition.metadata"
    topic_id = uuid.UUID("6c2a4a7e-2f1b-4a35-9b6a-0d1c9f3f0b01")
    cp.write_partition_metadata(path, topic_id)
    text = path.read_text()
    # as Kafka 4.4 writes it: 43 bytes, no newline after the id
    assert text == "version: 0\ntopic_id: bCpKfi8bSjWbag0cnz8LAQ"
    assert cp.read_partition_metadata(path) == topic_id
    path.write_text(text + "\n")  # as Odradek wrote it before
    assert cp.read_partition_metadata(path) == topic_id
    path.write_text(text)
    assert cp.uuid_from_kafka_string(cp.uuid_to_kafka_string(topic_id)) == topic_id
    path.write_text("version: 1\ntopic_id: x\n")
    with pytest.raises(cp.CorruptCheckpoint):
        cp.read_partition_metadata(path)


def test_meta_properties(tmp_path):
    path = tmp_path / "meta.properties"
    cp.write_meta_properties(path, cp.MetaProperties(broker_id=3, cluster_id="abc"))
    text = path.read_text()
    assert "broker.id=3" in text and "cluster.id=abc" in text and "version=0" in text
    assert cp.read_meta_properties(path) == cp.MetaProperties(3, "abc", 0)
    path.write_text("#comment\nversion=1\nnode.id=5\ncluster.id=x\ndirectory.id=y\n")
    assert cp.read_meta_properties(path) == cp.MetaProperties(5, "x", 1)
