// Compresses and decompresses files with the JVM codec libraries Kafka's Java client uses:
// snappy-java's framed stream, zstd-jni's stream, lz4-java's frame stream.
// Usage: java -cp <jars> JvmCodecs.java (compress|decompress) codec in out [...]
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;

public class JvmCodecs {
    public static void main(String[] args) throws Exception {
        for (int i = 0; i + 3 < args.length; i += 4) {
            String mode = args[i];
            String codec = args[i + 1];
            byte[] data = Files.readAllBytes(Path.of(args[i + 2]));
            Path out = Path.of(args[i + 3]);
            try {
                if (mode.equals("compress")) {
                    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
                    OutputStream stream = switch (codec) {
                        case "snappy" -> new org.xerial.snappy.SnappyOutputStream(buffer);
                        case "zstd" -> new com.github.luben.zstd.ZstdOutputStreamNoFinalizer(buffer, 3);
                        case "lz4" -> new net.jpountz.lz4.LZ4FrameOutputStream(
                                buffer, net.jpountz.lz4.LZ4FrameOutputStream.BLOCKSIZE.SIZE_64KB);
                        default -> throw new IllegalArgumentException(codec);
                    };
                    stream.write(data);
                    stream.close();
                    Files.write(out, buffer.toByteArray());
                } else {
                    ByteArrayInputStream source = new ByteArrayInputStream(data);
                    InputStream stream = switch (codec) {
                        case "snappy" -> new org.xerial.snappy.SnappyInputStream(source);
                        case "zstd" -> new com.github.luben.zstd.ZstdInputStreamNoFinalizer(source);
                        case "lz4" -> new net.jpountz.lz4.LZ4FrameInputStream(source);
                        default -> throw new IllegalArgumentException(codec);
                    };
                    Files.write(out, stream.readAllBytes());
                }
            } catch (Exception e) {
                Files.writeString(Path.of(args[i + 3] + ".error"), e.toString());
            }
        }
    }
}
