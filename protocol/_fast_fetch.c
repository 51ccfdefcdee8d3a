/* protocol._fast_fetch: the compiled twin of protocol.fast_fetch.encode_py.
 *
 * An optional accelerator (setup.py builds it with optional=True; without a C compiler the pure-Python
 * encoder is used). It takes the same arguments, returns the same bytes split into the same buffers
 * (gathered runs are bytes here, bytearrays there) and returns None in the same cases; the tests hold
 * it to encode_py and to the generated codec byte for byte. Why it exists: the Python loop costs at
 * least ~200 ns per partition in CPython 3.11 (one struct call with 11 arguments is ~110 ns of it),
 * which puts a 10-partition FetchResponse above the 2 us budget; see docs/benchmarks.md.
 *
 * Layout written (FetchResponse v12+, flexible, body only):
 *   throttle_time_ms int32, error_code int16, session_id int32, topics compact array of
 *     topic: name compact string (v12) or topic_id uuid (v13+), partitions compact array of
 *       partition_index int32, error_code int16, high_watermark int64, last_stable_offset int64,
 *       log_start_offset int64, aborted_transactions compact array (null or empty only),
 *       preferred_read_replica int32, records compact records, tagged fields (none)
 *     tagged fields (none)
 *   tagged fields (none)
 */
/* Every sequence is taken as a tuple (PySequence_Tuple: the same object for a tuple, a copy of a
 * list), so that Python code run from here (__len__, __index__, __bool__, UUID.bytes) cannot
 * resize what is being walked. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Records longer than this (protocol.codegen.INLINE_RECORDS_MAX) travel as their own buffer. */
#define INLINE_RECORDS_MAX 512
/* A records length varint (length + 1) of 4 bytes or more is left to the generated codec. */
#define RECORDS_U_LIMIT 2097152

typedef struct {
    unsigned char *p;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t n) {
    if (b->len + n <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    unsigned char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Callers reserve first; these only write. */
static inline void put_u8(Buf *b, unsigned v) { b->p[b->len++] = (unsigned char)v; }

static inline void put_be16(Buf *b, uint16_t v) {
    b->p[b->len++] = (unsigned char)(v >> 8);
    b->p[b->len++] = (unsigned char)v;
}

static inline void put_be32(Buf *b, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
        b->p[b->len++] = (unsigned char)(v >> shift);
    }
}

static inline void put_be64(Buf *b, uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) {
        b->p[b->len++] = (unsigned char)(v >> shift);
    }
}

/* An unsigned varint of at most 5 bytes (callers reserve 5). */
static inline void put_uvarint(Buf *b, uint32_t v) {
    while (v >= 0x80) {
        b->p[b->len++] = (unsigned char)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (unsigned char)v;
}

/* The gathered bytes so far become one buffer of the output list. */
static int buf_flush(Buf *b, PyObject *out) {
    PyObject *chunk = PyBytes_FromStringAndSize((const char *)b->p, b->len);
    if (chunk == NULL) {
        return -1;
    }
    int rc = PyList_Append(out, chunk);
    Py_DECREF(chunk);
    b->len = 0;
    return rc;
}

/* An integer argument within [lo, hi], as struct.pack would take it (via __index__). */
static int as_int(PyObject *o, long long lo, long long hi, const char *what, long long *v) {
    long long x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (x < lo || x > hi) {
        PyErr_Format(PyExc_OverflowError, "%s out of range: %lld", what, x);
        return -1;
    }
    *v = x;
    return 0;
}

#define I16_MIN (-32768LL)
#define I16_MAX 32767LL
#define I32_MIN (-2147483647LL - 1)
#define I32_MAX 2147483647LL

enum { ENC_ERROR = -1, ENC_OK = 0, ENC_GENERIC = 1 };

/* The topic's key: 16 bytes of topic id (v13+; None is the zero UUID) or the name as a compact
 * string. */
static int put_topic_key(Buf *b, PyObject *topic, int by_id) {
    if (by_id) {
        if (buf_reserve(b, 16) < 0) {
            return -1;
        }
        if (topic == Py_None) {
            memset(b->p + b->len, 0, 16);
            b->len += 16;
            return 0;
        }
        PyObject *raw = PyObject_GetAttrString(topic, "bytes");
        if (raw == NULL) {
            return -1;
        }
        if (!PyBytes_Check(raw) || PyBytes_GET_SIZE(raw) != 16) {
            Py_DECREF(raw);
            PyErr_SetString(PyExc_TypeError, "a topic id must be a uuid.UUID");
            return -1;
        }
        memcpy(b->p + b->len, PyBytes_AS_STRING(raw), 16);
        b->len += 16;
        Py_DECREF(raw);
        return 0;
    }
    if (!PyUnicode_Check(topic)) {
        PyErr_SetString(PyExc_TypeError, "a topic name must be a str");
        return -1;
    }
    Py_ssize_t n;
    const char *name = PyUnicode_AsUTF8AndSize(topic, &n);
    if (name == NULL) {
        return -1;
    }
    if (n >= (Py_ssize_t)UINT32_MAX || buf_reserve(b, n + 5) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_OverflowError, "topic name too long");
        }
        return -1;
    }
    put_uvarint(b, (uint32_t)(n + 1));
    memcpy(b->p + b->len, name, (size_t)n);
    b->len += n;
    return 0;
}

/* One partition. `lead` is the byte before its fields: the previous partition's (empty) tagged
 * fields, or for a topic's first partition the last byte of the partition count, so that a
 * partition whose records travel alone starts a new buffer with its own header. */
static int put_partition(Buf *b, PyObject *out, PyObject *part, unsigned lead) {
    PyObject *seq = PySequence_Tuple(part);
    if (seq == NULL) {
        return ENC_ERROR;
    }
    int rc = ENC_ERROR;
    if (PyTuple_GET_SIZE(seq) != 8) {
        PyErr_SetString(PyExc_ValueError, "a partition tuple has 8 items");
        goto done;
    }
    PyObject **f = &PyTuple_GET_ITEM(seq, 0);
    PyObject *aborted = f[5];
    PyObject *records = f[7];
    int has_aborted = PyObject_IsTrue(aborted);
    if (has_aborted < 0) {
        goto done;
    }
    if (has_aborted) {
        rc = ENC_GENERIC; /* aborted transactions: the generated codec writes them */
        goto done;
    }
    long long index, error, hw, lso, log_start, prr;
    if (as_int(f[0], I32_MIN, I32_MAX, "partition_index", &index) < 0 ||
        as_int(f[1], I16_MIN, I16_MAX, "error_code", &error) < 0 ||
        as_int(f[2], LLONG_MIN, LLONG_MAX, "high_watermark", &hw) < 0 ||
        as_int(f[3], LLONG_MIN, LLONG_MAX, "last_stable_offset", &lso) < 0 ||
        as_int(f[4], LLONG_MIN, LLONG_MAX, "log_start_offset", &log_start) < 0 ||
        as_int(f[6], I32_MIN, I32_MAX, "preferred_read_replica", &prr) < 0) {
        goto done;
    }
    Py_ssize_t u = 0; /* the records length varint: length + 1, or 0 for null */
    if (records != Py_None) {
        Py_ssize_t n = PyObject_Size(records);
        if (n < 0) {
            goto done;
        }
        if (n + 1 >= RECORDS_U_LIMIT) {
            rc = ENC_GENERIC;
            goto done;
        }
        u = n + 1;
    }
    if (buf_reserve(b, 1 + 4 + 2 + 8 + 8 + 8 + 1 + 4 + 3) < 0) {
        goto done;
    }
    put_u8(b, lead);
    put_be32(b, (uint32_t)index);
    put_be16(b, (uint16_t)error);
    put_be64(b, (uint64_t)hw);
    put_be64(b, (uint64_t)lso);
    put_be64(b, (uint64_t)log_start);
    put_u8(b, aborted != Py_None); /* compact array: 0 is null, 1 is empty */
    put_be32(b, (uint32_t)prr);
    put_uvarint(b, (uint32_t)u);
    if (records == Py_None) {
        rc = ENC_OK;
        goto done;
    }
    int bytes_like = PyBytes_CheckExact(records) || PyByteArray_CheckExact(records) ||
                     PyMemoryView_Check(records);
    if (u > INLINE_RECORDS_MAX + 1 || !bytes_like) {
        if (buf_flush(b, out) < 0 || PyList_Append(out, records) < 0) {
            goto done;
        }
        rc = ENC_OK;
        goto done;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(records, &view, PyBUF_SIMPLE) < 0) {
        goto done;
    }
    if (buf_reserve(b, view.len) == 0) {
        memcpy(b->p + b->len, view.buf, (size_t)view.len);
        b->len += view.len;
        rc = ENC_OK;
    }
    PyBuffer_Release(&view);
done:
    Py_DECREF(seq);
    return rc;
}

/* One topic and its partitions. */
static int put_topic(Buf *b, PyObject *out, PyObject *item, int by_id) {
    PyObject *pair = PySequence_Tuple(item);
    if (pair == NULL) {
        return ENC_ERROR;
    }
    int rc = ENC_ERROR;
    PyObject *parts = NULL;
    if (PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_ValueError, "a topic tuple has 2 items");
        goto done;
    }
    if (put_topic_key(b, PyTuple_GET_ITEM(pair, 0), by_id) < 0) {
        goto done;
    }
    parts = PySequence_Tuple(PyTuple_GET_ITEM(pair, 1));
    if (parts == NULL) {
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(parts);
    if (buf_reserve(b, 5 + 2) < 0) {
        goto done;
    }
    if (n == 0) {
        put_u8(b, 1); /* no partitions */
        put_u8(b, 0); /* no topic tagged fields */
        rc = ENC_OK;
        goto done;
    }
    if (n >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many partitions");
        goto done;
    }
    put_uvarint(b, (uint32_t)(n + 1));
    b->len -= 1; /* the count's last byte leads the first partition */
    unsigned lead = b->p[b->len];
    for (Py_ssize_t i = 0; i < n; i++) {
        rc = put_partition(b, out, PyTuple_GET_ITEM(parts, i), lead);
        if (rc != ENC_OK) {
            goto done;
        }
        lead = 0;
    }
    rc = ENC_ERROR;
    if (buf_reserve(b, 2) < 0) {
        goto done;
    }
    put_u8(b, 0); /* the last partition's tagged fields */
    put_u8(b, 0); /* the topic's tagged fields */
    rc = ENC_OK;
done:
    Py_XDECREF(parts);
    Py_DECREF(pair);
    return rc;
}

static PyObject *fast_fetch_encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "encode(version, throttle_time_ms, error_code, session_id, topics)");
        return NULL;
    }
    long long version, throttle, error, session;
    if (as_int(args[0], LLONG_MIN, LLONG_MAX, "version", &version) < 0) {
        return NULL;
    }
    if (version < 12) {
        Py_RETURN_NONE;
    }
    if (as_int(args[1], I32_MIN, I32_MAX, "throttle_time_ms", &throttle) < 0 ||
        as_int(args[2], I16_MIN, I16_MAX, "error_code", &error) < 0 ||
        as_int(args[3], I32_MIN, I32_MAX, "session_id", &session) < 0) {
        return NULL;
    }
    PyObject *topics = PySequence_Tuple(args[4]);
    if (topics == NULL) {
        return NULL;
    }
    PyObject *out = PyList_New(0);
    Buf b = {NULL, 0, 0};
    int rc = ENC_ERROR;
    if (out == NULL) {
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(topics);
    if (n >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many topics");
        goto done;
    }
    if (buf_reserve(&b, 4 + 2 + 4 + 5) < 0) {
        goto done;
    }
    put_be32(&b, (uint32_t)throttle);
    put_be16(&b, (uint16_t)error);
    put_be32(&b, (uint32_t)session);
    put_uvarint(&b, (uint32_t)(n + 1));
    for (Py_ssize_t i = 0; i < n; i++) {
        rc = put_topic(&b, out, PyTuple_GET_ITEM(topics, i), version >= 13);
        if (rc != ENC_OK) {
            goto done;
        }
    }
    rc = ENC_ERROR;
    if (buf_reserve(&b, 1) < 0) {
        goto done;
    }
    put_u8(&b, 0); /* top-level tagged fields (no node endpoints) */
    if (buf_flush(&b, out) < 0) {
        goto done;
    }
    rc = ENC_OK;
done:
    PyMem_Free(b.p);
    Py_DECREF(topics);
    if (rc == ENC_OK) {
        return out;
    }
    Py_XDECREF(out);
    if (rc == ENC_GENERIC) {
        Py_RETURN_NONE;
    }
    return NULL;
}

static PyMethodDef methods[] = {
    {"encode", (PyCFunction)(void (*)(void))fast_fetch_encode, METH_FASTCALL,
     "encode(version, throttle_time_ms, error_code, session_id, topics) -> list | None\n\n"
     "The compiled protocol.fast_fetch.encode_py: same arguments, bytes and None cases."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    /* for the tests: the limit must equal protocol.codegen.INLINE_RECORDS_MAX */
    return PyModule_AddIntConstant(module, "INLINE_RECORDS_MAX", INLINE_RECORDS_MAX);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "protocol._fast_fetch",
    .m_doc = "The compiled FetchResponse v12+ encoder (see protocol.fast_fetch).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC PyInit__fast_fetch(void) { return PyModuleDef_Init(&module_def); }
