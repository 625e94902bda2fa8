-- Example inventory for the PostgreSQL example adapter (scripts/seed_examples.py postgres).
-- Runs inside the schema named on the command line (search_path), so it never touches other tables.
CREATE TABLE warehouses (
  code text PRIMARY KEY,
  city text NOT NULL,
  opened_on date NOT NULL
);
CREATE TABLE products (
  id integer PRIMARY KEY,
  sku uuid NOT NULL,
  name text NOT NULL,
  category text NOT NULL,
  price numeric(10, 2) NOT NULL,
  in_stock boolean NOT NULL,
  warehouse text NOT NULL REFERENCES warehouses(code),
  attributes jsonb NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL
);
INSERT INTO warehouses VALUES
  ('AMS', 'Amsterdam', '2015-03-01'), ('BER', 'Berlin', '2018-09-15'), ('LYS', 'Lyon', '2021-01-10');
INSERT INTO products VALUES
  (1, '0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0001', 'Oak desk', 'furniture', 349.00, true, 'AMS', '{"colour": "oak"}', '2024-05-01 09:30:00+00'),
  (2, '0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0002', 'Desk lamp', 'lighting', 39.90, true, 'AMS', '{"watts": 8}', '2024-05-02 10:00:00+00'),
  (3, '0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0003', 'Office chair', 'furniture', 219.50, false, 'BER', '{}', '2024-05-03 11:15:00+00'),
  (4, '0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0004', 'Floor lamp', 'lighting', 89.99, true, 'BER', '{"watts": 12}', '2024-05-04 08:00:00+00'),
  (5, '0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0005', 'Bookshelf', 'furniture', 159.00, true, 'LYS', '{"shelves": 5}', '2024-05-05 16:45:00+00'),
  (6, '0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0006', 'Monitor arm', 'accessories', 74.25, true, 'LYS', '{}', '2024-05-06 12:00:00+00');
