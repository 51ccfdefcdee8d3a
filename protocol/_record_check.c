/* protocol._record_check: the compiled twin of protocol.records.check.check_records_py.
 *
 * An optional accelerator (setup.py builds it with optional=True; without a C compiler the
 * pure-Python checker is used, ODRADEK_NO_EXTENSIONS=1 selects it too). Same arguments, same
 * answers: the tests hold the two to each other on valid, mutated and random inputs.
 *
 * It walks the records section of one magic-2 batch (after decompression) and checks what Kafka's
 * DefaultRecord.readFrom and LogValidator check, without building any object:
 *   each record: length varint (>= 6, within the section), attributes int8, timestamp delta
 *   varlong, offset delta varint (== the record's index), key length varint (-1 or within the
 *   record), value length varint (-1 or within the record), header count varint (>= 0), each
 *   header: key length varint (>= 0, within), value length varint (-1 or within); the record ends
 *   exactly where its length says; after `count` records the section ends.
 *   A missing key when `require_key` (a compacted topic); a timestamp delta outside [ts_lo, ts_hi].
 *
 * Returns None, or (kind, record index, message): kind 1 a broken structure, 2 a missing key,
 * 3 a timestamp out of range. Never reads outside the buffer; no allocation but the answer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define KIND_STRUCTURE 1
#define KIND_KEY 2
#define KIND_TIMESTAMP 3

/* a zigzag varint of at most `max_bytes` bytes; returns 0 on success */
static int read_varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int max_bytes,
                       int64_t *out) {
    uint64_t result = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= end) {
            return -1;
        }
        unsigned char b = p[(*pos)++];
        result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
            return 0;
        }
        shift += 7;
    }
    return -1;
}

static PyObject *fail(int kind, long long index, const char *message) {
    return Py_BuildValue("(iLs)", kind, index, message);
}

static PyObject *check_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "check_records(data, count, require_key, ts_lo, ts_hi) takes 5 arguments");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    long long count = PyLong_AsLongLong(args[1]);
    int require_key = PyObject_IsTrue(args[2]);
    long long ts_lo = PyLong_AsLongLong(args[3]);
    long long ts_hi = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred() || require_key < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    Py_ssize_t pos = 0;
    PyObject *answer = NULL;
    const char *message = NULL;
    int kind = KIND_STRUCTURE;
    long long index = 0;
    int64_t v;

    if (count < 0 || count > end / 6) {
        message = "the record count does not fit in the batch";
        index = 0;
        goto done;
    }
    for (index = 0; index < count; index++) {
        int64_t length;
        if (read_varint(p, end, &pos, 5, &length) < 0) {
            message = "a broken record length";
            goto done;
        }
        if (length < 6 || length > end - pos) {
            message = "a record length that does not fit in the batch";
            goto done;
        }
        Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes */
        int64_t timestamp_delta;
        if (read_varint(p, record_end, &pos, 10, &timestamp_delta) < 0) {
            message = "a broken timestamp delta";
            goto done;
        }
        if (read_varint(p, record_end, &pos, 5, &v) < 0) {
            message = "a broken offset delta";
            goto done;
        }
        if (v != index) {
            message = "an offset delta that is not the record's position in the batch";
            goto done;
        }
        /* key */
        if (read_varint(p, record_end, &pos, 5, &v) < 0 || v < -1 || v > record_end - pos) {
            message = "a key length that does not fit in the record";
            goto done;
        }
        if (v == -1) {
            if (require_key) {
                kind = KIND_KEY;
                message = "Compacted topic cannot accept message without key";
                goto done;
            }
        } else {
            pos += (Py_ssize_t)v;
        }
        /* value */
        if (read_varint(p, record_end, &pos, 5, &v) < 0 || v < -1 || v > record_end - pos) {
            message = "a value length that does not fit in the record";
            goto done;
        }
        if (v > 0) {
            pos += (Py_ssize_t)v;
        }
        /* headers */
        int64_t headers;
        if (read_varint(p, record_end, &pos, 5, &headers) < 0 || headers < 0 ||
            headers > record_end - pos) {
            message = "a header count that does not fit in the record";
            goto done;
        }
        for (int64_t h = 0; h < headers; h++) {
            if (read_varint(p, record_end, &pos, 5, &v) < 0 || v < 0 || v > record_end - pos) {
                message = "a header key length that does not fit in the record";
                goto done;
            }
            pos += (Py_ssize_t)v;
            if (read_varint(p, record_end, &pos, 5, &v) < 0 || v < -1 ||
                v > record_end - pos) {
                message = "a header value length that does not fit in the record";
                goto done;
            }
            if (v > 0) {
                pos += (Py_ssize_t)v;
            }
        }
        if (pos != record_end) {
            message = "a record whose length does not match its contents";
            goto done;
        }
        if (timestamp_delta < ts_lo || timestamp_delta > ts_hi) {
            kind = KIND_TIMESTAMP;
            message = "Timestamp out of range";
            goto done;
        }
    }
    if (pos != end) {
        message = "bytes left after the batch's last record";
        index = count;
        goto done;
    }
    answer = Py_None;
    Py_INCREF(answer);
done:
    PyBuffer_Release(&view);
    if (answer == NULL) {
        answer = fail(kind, index, message);
    }
    return answer;
}

static PyMethodDef methods[] = {
    {"check_records", (PyCFunction)(void (*)(void))check_records, METH_FASTCALL,
     "check_records(data, count, require_key, ts_lo, ts_hi) -> None | (kind, index, message)\n\n"
     "The compiled protocol.records.check.check_records_py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "protocol._record_check",
    .m_doc = "The compiled record-structure check (see protocol.records.check).",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__record_check(void) { return PyModuleDef_Init(&module_def); }
