"""Values several schemas share."""

#: An ``*_authorized_operations`` field's value when the operations were not requested
#: (INT32_MIN, Kafka's default).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648
